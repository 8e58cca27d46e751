//! Password hashing with Argon2id (the `argon2` crate's defaults: OWASP's recommended
//! parameters), stored as self-describing PHC strings so parameters can be raised later.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

/// Hashes a password with a fresh random salt.
pub fn hash(password: &str) -> Result<String, argon2::password_hash::Error> {
    // argon2 0.6 draws the salt from the OS generator itself.
    Ok(Argon2::default().hash_password(password.as_bytes())?.to_string())
}

/// True when `password` matches the stored PHC string; a malformed hash never matches.
pub fn verify(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_and_nothing_else() {
        let h = hash("correct horse battery staple").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("correct horse battery staple", &h));
        assert!(!verify("correct horse battery stapl", &h));
        assert!(!verify("anything", "not a phc string"));
    }
}
