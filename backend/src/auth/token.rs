//! Session tokens: HS256 JWTs with `exp`, `iss` and `aud` checked (spec/api.md).
//!
//! A token carries its user's token version (`ver`). A password change, a role change and a
//! logout raise the user's version, and a token whose `ver` is not the user's current one is
//! refused: every token issued before dies at once, although tokens are not stored anywhere.

use chrono::{DateTime, Duration, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

const ISSUER: &str = "anteroom";
const AUDIENCE: &str = "anteroom-api";

/// How long a login lasts.
pub const TOKEN_LIFETIME: Duration = Duration::hours(12);

/// What a token says: who (`sub` = user id) and until when.
#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    /// User id, as a string per RFC 7519.
    pub sub: String,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Always `anteroom`.
    pub iss: String,
    /// Always `anteroom-api`.
    pub aud: String,
    /// The user's token version when this was issued.
    pub ver: i64,
}

/// What a valid token says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// The user it speaks for.
    pub user_id: i64,
    /// That user's token version when it was issued; it must still be the current one.
    pub version: i64,
}

/// The signing and verification keys, built once from the configured secret.
#[derive(Clone)]
pub struct TokenKeys {
    encoding: EncodingKey,
    /// The current key first, then the key before the last rotation, if configured.
    decoding: Vec<DecodingKey>,
    validation: Validation,
}

impl TokenKeys {
    /// Keys from a secret of at least 32 bytes, and optionally the secret it replaced: tokens
    /// signed with that one stay valid until they expire, so a key rotation logs nobody out.
    pub fn new(secret: &[u8], previous: Option<&[u8]>) -> Self {
        // Pin the algorithm: a token that names another one (e.g. `none`) is refused.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 30;
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: std::iter::once(secret)
                .chain(previous)
                .map(DecodingKey::from_secret)
                .collect(),
            validation,
        }
    }

    /// Issues a token for a user at their current token version; returns it with its expiry.
    pub fn issue(
        &self,
        user_id: i64,
        version: i64,
        now: DateTime<Utc>,
    ) -> Result<(String, DateTime<Utc>), jsonwebtoken::errors::Error> {
        let expires_at = now + TOKEN_LIFETIME;
        let claims = Claims {
            sub: user_id.to_string(),
            exp: expires_at.timestamp(),
            iat: now.timestamp(),
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            ver: version,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)?;
        Ok((token, expires_at))
    }

    /// Who a valid token speaks for; `None` for anything invalid or expired. The caller still
    /// compares the version with the user's current one.
    pub fn verify(&self, token: &str) -> Option<Verified> {
        let data = self
            .decoding
            .iter()
            .find_map(|key| jsonwebtoken::decode::<Claims>(token, key, &self.validation).ok())?;
        Some(Verified {
            user_id: data.claims.sub.parse().ok()?,
            version: data.claims.ver,
        })
    }
}

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKeys(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    const OTHER: &[u8] = b"another-secret-another-secret-xx";

    /// A token signed with `SECRET` carrying exactly these claims.
    fn signed(claims: serde_json::Value) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap()
    }

    fn claims(iss: &str, aud: &str) -> serde_json::Value {
        serde_json::json!({
            "sub": "7", "exp": Utc::now().timestamp() + 3600, "iat": Utc::now().timestamp(),
            "iss": iss, "aud": aud, "ver": 0
        })
    }

    #[test]
    fn an_issued_token_verifies_to_its_user_and_version() {
        let keys = TokenKeys::new(SECRET, None);
        let (token, exp) = keys.issue(42, 3, Utc::now()).unwrap();
        assert!(exp > Utc::now());
        assert_eq!(
            keys.verify(&token),
            Some(Verified {
                user_id: 42,
                version: 3
            })
        );
    }

    #[test]
    fn an_expired_token_or_one_signed_with_another_key_is_refused() {
        let keys = TokenKeys::new(SECRET, None);
        let (old, _) = keys.issue(1, 0, Utc::now() - Duration::days(2)).unwrap();
        assert_eq!(keys.verify(&old), None);
        let other = TokenKeys::new(OTHER, None);
        let (foreign, _) = other.issue(1, 0, Utc::now()).unwrap();
        assert_eq!(keys.verify(&foreign), None);
        assert_eq!(keys.verify("garbage"), None);
    }

    #[test]
    fn a_token_for_another_issuer_or_audience_is_refused() {
        let keys = TokenKeys::new(SECRET, None);
        assert!(
            keys.verify(&signed(claims(ISSUER, AUDIENCE))).is_some(),
            "the control passes"
        );
        assert_eq!(keys.verify(&signed(claims("someone-else", AUDIENCE))), None);
        assert_eq!(keys.verify(&signed(claims(ISSUER, "another-api"))), None);
        let mut no_aud = claims(ISSUER, AUDIENCE);
        no_aud.as_object_mut().unwrap().remove("aud");
        assert_eq!(keys.verify(&signed(no_aud)), None);
    }

    #[test]
    fn a_token_signed_with_the_previous_key_is_accepted_only_while_that_key_is_configured() {
        let before = TokenKeys::new(OTHER, None);
        let (old, _) = before.issue(5, 0, Utc::now()).unwrap();
        let rotated = TokenKeys::new(SECRET, Some(OTHER));
        assert_eq!(rotated.verify(&old).map(|v| v.user_id), Some(5));
        let (new, _) = rotated.issue(5, 0, Utc::now()).unwrap();
        assert_eq!(before.verify(&new), None, "new tokens are signed with the new key only");
        let previous_dropped = TokenKeys::new(SECRET, None);
        assert_eq!(previous_dropped.verify(&old), None);
    }

    #[test]
    fn a_token_with_the_none_algorithm_is_refused() {
        let keys = TokenKeys::new(SECRET, None);
        // header {"alg":"none","typ":"JWT"}, a valid-looking payload, no signature.
        let payload = format!(
            r#"{{"sub":"1","exp":{},"iat":0,"iss":"anteroom","aud":"anteroom-api","ver":0}}"#,
            Utc::now().timestamp() + 3600
        );
        use base64_like::encode;
        let token = format!(
            "{}.{}.",
            encode(br#"{"alg":"none","typ":"JWT"}"#),
            encode(payload.as_bytes())
        );
        assert_eq!(keys.verify(&token), None);
    }

    /// URL-safe base64 without padding, enough for the test above.
    mod base64_like {
        pub fn encode(bytes: &[u8]) -> String {
            const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            let mut out = String::new();
            for chunk in bytes.chunks(3) {
                let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
                let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
                let chars = chunk.len() + 1;
                for i in 0..chars {
                    out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
                }
            }
            out
        }
    }
}
