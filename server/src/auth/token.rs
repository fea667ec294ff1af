//! Secret tokens (API and share tokens): 32 random bytes, shown once as `arb_<base64url>`; the store keeps
//! only their SHA-256, so a leaked database does not leak a usable token.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

pub const PREFIX: &str = "arb_";

/// A new secret token: what the user is shown once.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// What the store keeps: the SHA-256 of the token, hex-encoded.
pub fn digest(token: &str) -> String {
    sha256_hex(token.trim().as_bytes())
}

use engine::sha256_hex;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashed() {
        let (a, b) = (generate(), generate());
        assert_ne!(a, b);
        assert!(a.starts_with(PREFIX) && a.len() == PREFIX.len() + 43, "{a}");
        assert_eq!(digest(&a).len(), 64);
        assert_eq!(digest(&a), digest(&format!(" {a}\n")), "surrounding white space from a paste is ignored");
        assert_ne!(digest(&a), digest(&b));
        assert!(!digest(&a).contains(&a[4..]), "the digest does not contain the secret");
    }
}
