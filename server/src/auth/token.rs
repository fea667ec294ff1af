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

/// A secret Arbiter can make again without storing it: `arb_` and the base64url HMAC-SHA256 of `label`
/// under the server's link key (`link_key`). The store keeps only its digest, as for a random one.
pub fn derived(key: &[u8; 32], label: &str) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(label.as_bytes());
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
}

/// The server's link key (`{data_dir}/link.key`, 32 random bytes, mode 0600), made on first use. It is
/// written whole under another name and linked into place, so two first uses agree on one key.
pub fn link_key(data_dir: &std::path::Path) -> std::io::Result<[u8; 32]> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = data_dir.join("link.key");
    let read = |p: &std::path::Path| -> std::io::Result<[u8; 32]> {
        let bytes = std::fs::read(p)?;
        bytes.try_into().map_err(|_| std::io::Error::other(format!("{} is not 32 bytes: remove it to make a new key (every comment link then changes)", p.display())))
    };
    match read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    let mut key = [0u8; 32];
    OsRng.fill_bytes(&mut key);
    let temp = data_dir.join(format!(".link.key.{}", engine::random_hex(12)));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
    f.write_all(&key)?;
    f.sync_all()?;
    let linked = std::fs::hard_link(&temp, &path);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(&path),
        Err(e) => Err(e),
    }
}

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

    #[test]
    fn derived_secrets_depend_on_the_key_and_the_label_and_the_key_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let key = link_key(dir.path()).unwrap();
        assert_eq!(link_key(dir.path()).unwrap(), key, "made once, then read");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(dir.path().join("link.key")).unwrap().permissions().mode() & 0o777, 0o600);
        let a = derived(&key, "comment-link:1:0");
        assert_eq!(a, derived(&key, "comment-link:1:0"));
        assert_ne!(a, derived(&key, "comment-link:1:1"));
        assert_ne!(a, derived(&[7u8; 32], "comment-link:1:0"));
        assert!(a.starts_with(PREFIX) && a.len() == PREFIX.len() + 43, "{a}");
        std::fs::write(dir.path().join("link.key"), b"short").unwrap();
        assert!(link_key(dir.path()).unwrap_err().to_string().contains("not 32 bytes"));
    }
}
