//! `arbiter user add` and `arbiter token create`: the first-run path to an account and a CI token.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use store::Store;

const BIN: &str = env!("CARGO_BIN_EXE_arbiter");

fn arbiter(data_dir: &std::path::Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

async fn store(dir: &std::path::Path) -> Store {
    Store::open(&format!("sqlite://{}/arbiter.db", dir.canonicalize().unwrap().display())).await.unwrap()
}

#[tokio::test]
async fn users_are_created_with_argon2_hashes_and_audited() {
    let dir = tempfile::tempdir().unwrap();
    let out = arbiter(dir.path(), &["user", "add", "ada", "--role", "admin"], "a long enough passphrase\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("created admin user \"ada\""));
    let s = store(dir.path()).await;
    let ada = s.user_by_name("ada").await.unwrap().unwrap();
    assert!(ada.password_hash.starts_with("$argon2id$"), "{}", ada.password_hash);
    assert!(!ada.password_hash.contains("passphrase"));
    let log = s.audit_log(10).await.unwrap();
    assert_eq!((log[0].action.as_str(), log[0].detail["name"].as_str()), ("user.create", Some("ada")));
    s.close().await;

    let dup = arbiter(dir.path(), &["user", "add", "ada", "--role", "viewer"], "another long passphrase\n");
    assert_eq!(dup.status.code(), Some(2));
    assert!(stderr(&dup).contains("user \"ada\" already exists"), "{}", stderr(&dup));
    let weak = arbiter(dir.path(), &["user", "add", "bob", "--role", "viewer"], "short\n");
    assert_eq!(weak.status.code(), Some(2));
    assert!(stderr(&weak).contains("use at least 12"), "{}", stderr(&weak));
    let role = arbiter(dir.path(), &["user", "add", "bob", "--role", "root"], "a long enough passphrase\n");
    assert!(stderr(&role).contains("use viewer, launcher or admin"));
    let name = arbiter(dir.path(), &["user", "add", "bob; rm -rf /", "--role", "viewer"], "a long enough passphrase\n");
    assert!(stderr(&name).contains("user name"), "{}", stderr(&name));
    let s = store(dir.path()).await;
    assert_eq!(s.count_users().await.unwrap(), 1, "nothing stored by the refused commands");
    s.close().await;
}

#[tokio::test]
async fn api_tokens_are_shown_once_and_stored_as_digests() {
    let dir = tempfile::tempdir().unwrap();
    assert!(arbiter(dir.path(), &["user", "add", "lin", "--role", "launcher"], "a long enough passphrase\n").status.success());
    assert!(arbiter(dir.path(), &["user", "add", "vic", "--role", "viewer"], "a long enough passphrase\n").status.success());
    let out = arbiter(dir.path(), &["token", "create", "--user", "lin", "--name", "ci-nightly", "--expires-in-days", "30"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let secret = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(secret.starts_with("arb_") && secret.len() > 40, "{secret}");

    let db = std::fs::read(dir.path().join("arbiter.db")).unwrap();
    assert!(!db.windows(secret.len()).any(|w| w == secret.as_bytes()), "the secret itself is never stored");
    let s = store(dir.path()).await;
    let digest = sha2_digest::hex_sha256(&secret);
    let tok = s.touch_api_token(&digest).await.unwrap().expect("found by its digest");
    assert_eq!(tok.name, "ci-nightly");
    let lifetime = tok.expires_at.unwrap() - tok.created_at;
    assert!((lifetime - 30 * 86_400_000).abs() < 60_000, "expires 30 days after creation: {lifetime} ms");
    s.close().await;

    let too_much = arbiter(dir.path(), &["token", "create", "--user", "lin", "--name", "x", "--role", "admin"], "");
    assert!(stderr(&too_much).contains("more rights than its user"), "{}", stderr(&too_much));
    let viewer = arbiter(dir.path(), &["token", "create", "--user", "vic", "--name", "x", "--role", "viewer"], "");
    assert!(stderr(&viewer).contains("created by launchers and admins"), "{}", stderr(&viewer));
    let nobody = arbiter(dir.path(), &["token", "create", "--user", "zed", "--name", "x"], "");
    assert!(stderr(&nobody).contains("no user \"zed\""));
}

/// SHA-256 hex, computed independently of the server's token module.
mod sha2_digest {
    use std::io::Write;
    use std::process::{Command, Stdio};

    pub fn hex_sha256(s: &str) -> String {
        let mut child = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().to_string()
    }
}

#[tokio::test]
async fn tokens_are_listed_without_secrets_and_revoked_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let out = arbiter(dir.path(), &["user", "add", "cici", "--role", "launcher"], "a long enough passphrase\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = arbiter(dir.path(), &["token", "create", "--user", "cici", "--name", "nightly"], "");
    let secret = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(secret.starts_with("arb_"), "{secret}");

    let listed = arbiter(dir.path(), &["token", "list"], "");
    let text = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(text.contains("nightly") && text.contains("cici") && text.contains("launcher"), "{text}");
    assert!(!text.contains(&secret[4..]), "no secret in a listing");
    let id = text.lines().nth(1).unwrap().split_whitespace().next().unwrap().to_string();

    let out = arbiter(dir.path(), &["token", "revoke", &id], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(id, "1", "the first token");
    let again = arbiter(dir.path(), &["token", "revoke", &id], "");
    assert_eq!(again.status.code(), Some(2), "revoking twice says so");
    assert!(stderr(&again).contains("active API token 1 does not exist"), "{}", stderr(&again));
    let s = store(dir.path()).await;
    let token = s.touch_api_token(&server::auth::token::digest(&secret)).await.unwrap().unwrap();
    assert!(token.revoked_at.is_some());
    assert!(s.audit_log(10).await.unwrap().iter().any(|e| e.action == "token.revoke"));
    s.close().await;
}
