//! Account actions shared by the CLI (`arbiter user add`, `arbiter token create|list|revoke`) and the API.

use super::{password, token};
use crate::cli::{StoreArgs, TokenCreateArgs, TokenListArgs, TokenRevokeArgs, UserAddArgs};
use std::io::{BufRead, IsTerminal, Write};
use store::people::Role;
use store::Store;

async fn open_store(args: &StoreArgs) -> Result<Store, String> {
    let url = args.database_url()?;
    Store::open(&url).await.map_err(|e| e.to_string())
}

pub fn parse_role(text: &str) -> Result<Role, String> {
    text.parse::<Role>().map_err(|_| format!("--role {text:?}: use viewer, launcher or admin"))
}

pub fn valid_username(name: &str) -> bool {
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

/// Why an account change was refused.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

impl From<AccountError> for crate::api::error::ApiError {
    fn from(e: AccountError) -> Self {
        match e {
            AccountError::Invalid(m) => Self::BadRequest(m),
            AccountError::Forbidden(m) => Self::Forbidden(m),
            AccountError::Store(e) => e.into(),
        }
    }
}

/// Creates a user after checking the name and the password policy; audited as done by `actor`.
pub async fn create_user(store: &Store, actor: Option<i64>, name: &str, role: Role, pw: &str, via: &str) -> Result<i64, AccountError> {
    if !valid_username(name) {
        return Err(AccountError::Invalid(format!("user name {name:?}: use 1–64 letters, digits, '-', '_', '.' or '@'")));
    }
    password::check_policy(pw).map_err(AccountError::Invalid)?;
    let pw = pw.to_string();
    let hash = tokio::task::spawn_blocking(move || password::hash(&pw))
        .await
        .map_err(|e| AccountError::Invalid(e.to_string()))?
        .map_err(AccountError::Invalid)?;
    let id = store.insert_user(name, &hash, role).await?;
    let detail = serde_json::json!({"name": name, "role": role.as_str(), "via": via});
    store.audit(actor, "user.create", &format!("user:{id}"), None, &detail).await?;
    Ok(id)
}

/// Issues an API token for `user` (shown once, stored as a digest); audited as done by `actor`. A token
/// made by a request authenticated with another token (`parent`) expires no later than its parent, and is
/// refused once its parent is revoked or expired (`principal::api_token_principal` walks the chain).
pub async fn issue_api_token(
    store: &Store,
    actor: Option<i64>,
    user: &store::people::User,
    name: &str,
    role: Role,
    expires_in_days: Option<u32>,
    parent: Option<&store::people::ApiToken>,
) -> Result<(i64, String), AccountError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(AccountError::Invalid("give the token a name of 1–100 characters (e.g. the CI job it is for)".into()));
    }
    if user.role == Role::Viewer {
        return Err(AccountError::Forbidden("API tokens are created by launchers and admins".into()));
    }
    if role > user.role {
        return Err(AccountError::Forbidden(format!(
            "a token cannot have more rights than its user: {:?} is a {}",
            user.username,
            user.role.as_str()
        )));
    }
    let expires_at = match expires_in_days {
        Some(0) => return Err(AccountError::Invalid("expires_in_days must be at least 1".into())),
        Some(days) if days > 3650 => return Err(AccountError::Invalid("expires_in_days must be at most 3650".into())),
        Some(days) => Some(store::now_ms() + i64::from(days) * 86_400_000),
        None => None,
    };
    let expires_at = match (expires_at, parent.and_then(|p| p.expires_at)) {
        (Some(asked), Some(cap)) => Some(asked.min(cap)),
        (asked, cap) => asked.or(cap),
    };
    let secret = token::generate();
    let id = store.insert_api_token(user.id, name, &token::digest(&secret), role, expires_at, parent.map(|p| p.id)).await?;
    let detail = serde_json::json!({"name": name, "role": role.as_str(), "user": user.username, "expires_at": expires_at,
        "parent_token": parent.map(|p| p.id)});
    store.audit(actor, "token.create", &format!("api_token:{id}"), None, &detail).await?;
    Ok((id, secret))
}

pub async fn add_user(args: UserAddArgs) -> Result<i32, String> {
    let role = parse_role(&args.role)?;
    let pw = read_password()?;
    let store = open_store(&args.store).await?;
    create_user(&store, None, &args.name, role, &pw, "cli").await.map_err(|e| e.to_string())?;
    store.close().await;
    println!("created {} user {:?}", role.as_str(), args.name);
    Ok(0)
}

pub async fn create_token(args: TokenCreateArgs) -> Result<i32, String> {
    let role = parse_role(&args.role)?;
    let store = open_store(&args.store).await?;
    let user = store.user_by_name(&args.user).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("no user {:?}", args.user))?;
    let (_, secret) =
        issue_api_token(&store, Some(user.id), &user, &args.name, role, args.expires_in_days, None).await.map_err(|e| e.to_string())?;
    store.close().await;
    // Shown once: only its digest is stored.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{secret}");
    if std::io::stderr().is_terminal() {
        eprintln!("This token is shown only once; store it now (e.g. as a CI secret).");
    }
    Ok(0)
}

pub async fn list_tokens(args: TokenListArgs) -> Result<i32, String> {
    let store = open_store(&args.store).await?;
    let user = match &args.user {
        Some(name) => Some(store.user_by_name(name).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("no user {name:?}"))?),
        None => None,
    };
    let tokens = store.list_api_tokens(user.as_ref().map(|u| u.id)).await.map_err(|e| e.to_string())?;
    let users = store.list_users().await.map_err(|e| e.to_string())?;
    store.close().await;
    let when = |t: Option<i64>| t.map(|t| judge::units::utc_rfc3339(t / 1000)).unwrap_or_else(|| "-".into());
    println!("  id  {:<20} {:<12} {:<9} {:<20} {:<20} {:<20} revoked", "name", "user", "role", "created", "expires", "last used");
    for t in tokens {
        let owner = users.iter().find(|u| u.id == t.user_id).map(|u| u.username.as_str()).unwrap_or("?");
        println!(
            "{:>4}  {:<20} {:<12} {:<9} {:<20} {:<20} {:<20} {}",
            t.id,
            t.name,
            owner,
            t.role.as_str(),
            when(Some(t.created_at)),
            when(t.expires_at),
            when(t.last_used_at),
            when(t.revoked_at)
        );
    }
    Ok(0)
}

pub async fn revoke_token(args: TokenRevokeArgs) -> Result<i32, String> {
    let store = open_store(&args.store).await?;
    store.revoke_api_token(args.id).await.map_err(|e| e.to_string())?;
    store
        .audit(None, "token.revoke", &format!("api_token:{}", args.id), None, &serde_json::json!({"via": "cli"}))
        .await
        .map_err(|e| e.to_string())?;
    store.close().await;
    println!("revoked API token {}", args.id);
    Ok(0)
}
