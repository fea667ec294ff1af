//! Passwords: argon2id (the argon2 crate's defaults) with a per-password random salt, stored in PHC form.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// Shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 12;

/// Checks a new password against the policy; the message says what to change.
pub fn check_policy(password: &str) -> Result<(), String> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(format!("the password has {chars} characters; use at least {MIN_PASSWORD_CHARS}"));
    }
    if password.trim() != password {
        return Err("the password starts or ends with white space; remove it".into());
    }
    Ok(())
}

pub fn hash(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| format!("cannot hash the password: {e}"))
}

/// True when `password` matches the stored PHC hash; a malformed hash never matches.
// The login route (accounts issue, next step) is its caller; until then only the tests are.
#[cfg_attr(not(test), allow(dead_code))]
pub fn verify(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_are_salted() {
        let a = hash("correct horse battery").unwrap();
        let b = hash("correct horse battery").unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "a fresh salt each time");
        assert!(verify("correct horse battery", &a));
        assert!(!verify("correct horse battery!", &a));
        assert!(!verify("anything", "not a phc string"));
    }

    #[test]
    fn policy() {
        assert!(check_policy("short").unwrap_err().contains("at least 12"));
        assert!(check_policy(" padded password ").is_err());
        assert!(check_policy("a long enough passphrase").is_ok());
    }
}
