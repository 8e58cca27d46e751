//! Session tokens: HS256 JWTs with `exp`, `iss` and `aud` checked (spec/api.md).

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
}

/// The signing and verification keys, built once from the configured secret.
#[derive(Clone)]
pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl TokenKeys {
    /// Keys from a secret of at least 32 bytes.
    pub fn new(secret: &[u8]) -> Self {
        // Pin the algorithm: a token that names another one (e.g. `none`) is refused.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 30;
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
        }
    }

    /// Issues a token for a user; returns it with its expiry.
    pub fn issue(
        &self,
        user_id: i64,
        now: DateTime<Utc>,
    ) -> Result<(String, DateTime<Utc>), jsonwebtoken::errors::Error> {
        let expires_at = now + TOKEN_LIFETIME;
        let claims = Claims {
            sub: user_id.to_string(),
            exp: expires_at.timestamp(),
            iat: now.timestamp(),
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)?;
        Ok((token, expires_at))
    }

    /// The user id a valid token speaks for; `None` for anything invalid or expired.
    pub fn verify(&self, token: &str) -> Option<i64> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).ok()?;
        data.claims.sub.parse().ok()
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

    #[test]
    fn an_issued_token_verifies_to_its_user() {
        let keys = TokenKeys::new(SECRET);
        let (token, exp) = keys.issue(42, Utc::now()).unwrap();
        assert!(exp > Utc::now());
        assert_eq!(keys.verify(&token), Some(42));
    }

    #[test]
    fn an_expired_token_or_one_signed_with_another_key_is_refused() {
        let keys = TokenKeys::new(SECRET);
        let (old, _) = keys.issue(1, Utc::now() - Duration::days(2)).unwrap();
        assert_eq!(keys.verify(&old), None);
        let other = TokenKeys::new(b"another-secret-another-secret-xx");
        let (foreign, _) = other.issue(1, Utc::now()).unwrap();
        assert_eq!(keys.verify(&foreign), None);
        assert_eq!(keys.verify("garbage"), None);
    }

    #[test]
    fn a_token_with_the_none_algorithm_is_refused() {
        let keys = TokenKeys::new(SECRET);
        // header {"alg":"none","typ":"JWT"}, a valid-looking payload, no signature.
        let payload = format!(
            r#"{{"sub":"1","exp":{},"iat":0,"iss":"anteroom","aud":"anteroom-api"}}"#,
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
