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
/// The audience of a notebook cookie: never accepted by the API, and the API's tokens never by
/// a notebook origin (each validation pins its own audience, and each is signed with its own
/// key derived from the secret).
const NOTEBOOK_AUDIENCE: &str = "anteroom-notebook";

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
    /// When it expires (seconds since the epoch): a notebook cookie issued from it dies then too.
    pub expires_at: i64,
}

/// What a notebook cookie says: who may open which job's notebook, until when, and whether as
/// an admin who confirmed opening someone else's (`crate::notebooks::session`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotebookGrant {
    /// The viewer.
    pub user_id: i64,
    /// The viewer's token version at the handoff: a logout, password or role change ends it.
    pub version: i64,
    /// The job whose notebook origin the cookie belongs to.
    pub job_id: i64,
    /// Whether the viewer opened another user's notebook as an admin, after confirming.
    pub as_admin: bool,
    /// When it expires (seconds since the epoch): never after the portal session it came from.
    pub expires_at: i64,
}

/// The claims of a notebook cookie.
#[derive(Debug, Serialize, Deserialize)]
struct NotebookClaims {
    sub: String,
    exp: i64,
    iat: i64,
    iss: String,
    aud: String,
    ver: i64,
    job: i64,
    #[serde(default)]
    admin: bool,
}

/// The signing and verification keys, built once from the configured secret.
#[derive(Clone)]
pub struct TokenKeys {
    encoding: EncodingKey,
    /// The current key first, then the key before the last rotation, if configured.
    decoding: Vec<DecodingKey>,
    validation: Validation,
    /// The notebook cookies' keys, derived from the same secrets under another label.
    notebook_encoding: EncodingKey,
    notebook_decoding: Vec<DecodingKey>,
    notebook_validation: Validation,
}

/// A key for notebook cookies from a session secret: SHA-256 of a label and the secret, so a
/// notebook cookie can never verify as a session token even if the audience check were lost.
fn notebook_key(secret: &[u8]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(b"anteroom notebook cookie\0");
    hash.update(secret);
    hash.finalize().to_vec()
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
        let mut notebook_validation = validation.clone();
        notebook_validation.set_audience(&[NOTEBOOK_AUDIENCE]);
        notebook_validation.leeway = 0;
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: std::iter::once(secret)
                .chain(previous)
                .map(DecodingKey::from_secret)
                .collect(),
            validation,
            notebook_encoding: EncodingKey::from_secret(&notebook_key(secret)),
            notebook_decoding: std::iter::once(secret)
                .chain(previous)
                .map(|s| DecodingKey::from_secret(&notebook_key(s)))
                .collect(),
            notebook_validation,
        }
    }

    /// A notebook cookie's value for `grant`, issued at `now`.
    pub fn issue_notebook(
        &self,
        grant: &NotebookGrant,
        now: DateTime<Utc>,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = NotebookClaims {
            sub: grant.user_id.to_string(),
            exp: grant.expires_at,
            iat: now.timestamp(),
            iss: ISSUER.into(),
            aud: NOTEBOOK_AUDIENCE.into(),
            ver: grant.version,
            job: grant.job_id,
            admin: grant.as_admin,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.notebook_encoding)
    }

    /// What a valid, unexpired notebook cookie grants; `None` for anything else (a session
    /// token included). The caller still checks the user's version, role and the job.
    pub fn verify_notebook(&self, token: &str) -> Option<NotebookGrant> {
        let data = self
            .notebook_decoding
            .iter()
            .find_map(|key| jsonwebtoken::decode::<NotebookClaims>(token, key, &self.notebook_validation).ok())?;
        Some(NotebookGrant {
            user_id: data.claims.sub.parse().ok()?,
            version: data.claims.ver,
            job_id: data.claims.job,
            as_admin: data.claims.admin,
            expires_at: data.claims.exp,
        })
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
            expires_at: data.claims.exp,
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
                version: 3,
                expires_at: exp.timestamp(),
            })
        );
    }

    #[test]
    fn a_notebook_cookie_and_a_session_token_never_pass_for_each_other() {
        let keys = TokenKeys::new(SECRET, Some(OTHER));
        let grant = NotebookGrant {
            user_id: 4,
            version: 2,
            job_id: 17,
            as_admin: true,
            expires_at: (Utc::now() + Duration::hours(1)).timestamp(),
        };
        let cookie = keys.issue_notebook(&grant, Utc::now()).unwrap();
        assert_eq!(keys.verify_notebook(&cookie), Some(grant));
        assert_eq!(keys.verify(&cookie), None, "a notebook cookie is no session");
        let (session, _) = keys.issue(4, 2, Utc::now()).unwrap();
        assert_eq!(keys.verify_notebook(&session), None, "a session is no notebook cookie");
        // Even a token with the notebook audience signed with the session key is refused.
        let forged = signed(serde_json::json!({
            "sub": "4", "exp": Utc::now().timestamp() + 3600, "iat": 0, "iss": ISSUER,
            "aud": NOTEBOOK_AUDIENCE, "ver": 2, "job": 17, "admin": true
        }));
        assert_eq!(keys.verify_notebook(&forged), None);
        let expired = NotebookGrant {
            expires_at: Utc::now().timestamp() - 1,
            ..grant
        };
        assert_eq!(
            keys.verify_notebook(&keys.issue_notebook(&expired, Utc::now()).unwrap()),
            None
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
        let grant = NotebookGrant {
            user_id: 5,
            version: 0,
            job_id: 1,
            as_admin: false,
            expires_at: (Utc::now() + Duration::hours(1)).timestamp(),
        };
        let old_cookie = before.issue_notebook(&grant, Utc::now()).unwrap();
        assert_eq!(rotated.verify_notebook(&old_cookie), Some(grant));
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
