//! `arbiter user add` and `arbiter token create`: the first-run path to an account and a CI token.

use super::{password, token};
use crate::cli::{StoreArgs, TokenCreateArgs, UserAddArgs};
use std::io::{BufRead, IsTerminal, Write};
use store::people::Role;
use store::Store;

async fn open_store(args: &StoreArgs) -> Result<Store, String> {
    let url = args.database_url()?;
    Store::open(&url).await.map_err(|e| e.to_string())
}

fn parse_role(text: &str) -> Result<Role, String> {
    text.parse::<Role>().map_err(|_| format!("--role {text:?}: use viewer, launcher or admin"))
}

fn valid_username(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
}

/// The password from standard input: typed at a prompt (not echoed) on a terminal, else the first line.
fn read_password() -> Result<String, String> {
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ").map_err(|e| format!("cannot read the password: {e}"))?;
        let again = rpassword::prompt_password("Again: ").map_err(|e| format!("cannot read the password: {e}"))?;
        if first != again {
            return Err("the two passwords differ".into());
        }
        return Ok(first);
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(|e| format!("cannot read the password from stdin: {e}"))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

pub async fn add_user(args: UserAddArgs) -> Result<i32, String> {
    if !valid_username(&args.name) {
        return Err(format!("user name {:?}: use 1–64 letters, digits, '-', '_', '.' or '@'", args.name));
    }
    let role = parse_role(&args.role)?;
    let pw = read_password()?;
    password::check_policy(&pw)?;
    let hash = password::hash(&pw)?;
    let store = open_store(&args.store).await?;
    let id = store.insert_user(&args.name, &hash, role).await.map_err(|e| e.to_string())?;
    store
        .audit(
            None,
            "user.create",
            &format!("user:{id}"),
            None,
            &serde_json::json!({"name": args.name, "role": role.as_str(), "via": "cli"}),
        )
        .await
        .map_err(|e| e.to_string())?;
    store.close().await;
    println!("created {} user {:?}", role.as_str(), args.name);
    Ok(0)
}

pub async fn create_token(args: TokenCreateArgs) -> Result<i32, String> {
    let role = parse_role(&args.role)?;
    if args.name.trim().is_empty() || args.name.len() > 100 {
        return Err("--name: give the token a name of 1–100 characters (e.g. the CI job it is for)".into());
    }
    let store = open_store(&args.store).await?;
    let user = store.user_by_name(&args.user).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("no user {:?}", args.user))?;
    if role > user.role {
        return Err(format!("a token cannot have more rights than its user: {:?} is a {}", user.username, user.role.as_str()));
    }
    if user.role == Role::Viewer {
        return Err("API tokens are created by launchers and admins".into());
    }
    let expires_at = match args.expires_in_days {
        Some(0) => return Err("--expires-in-days must be at least 1".into()),
        Some(days) => Some(store::now_ms() + i64::from(days) * 86_400_000),
        None => None,
    };
    let secret = token::generate();
    let id =
        store.insert_api_token(user.id, args.name.trim(), &token::digest(&secret), role, expires_at).await.map_err(|e| e.to_string())?;
    store
        .audit(
            Some(user.id),
            "token.create",
            &format!("api_token:{id}"),
            None,
            &serde_json::json!({"name": args.name.trim(), "role": role.as_str()}),
        )
        .await
        .map_err(|e| e.to_string())?;
    store.close().await;
    // Shown once: only its digest is stored.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{secret}");
    if std::io::stderr().is_terminal() {
        eprintln!("This token is shown only once; store it now (e.g. as a CI secret).");
    }
    Ok(0)
}
