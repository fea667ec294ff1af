//! `POST /login` and `POST /logout`. Sign-in passes the throttle (`throttle.rs`: counted before the hash,
//! a bounded number of hashes at once), verifies the argon2 hash off the async
//! threads, then rotates the session id (no session fixation) and records the user and the time.

use super::{password, throttle, SessionUser, SESSION_USER};
use crate::api::error::ApiError;
use crate::auth::policy::encode;
use crate::state::AppState;
use axum::extract::{ConnectInfo, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::OnceLock;
use tower_sessions::Session;

#[derive(Deserialize)]
pub struct LoginForm {
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub next: Option<String>,
}

/// A hash to verify against when the user does not exist, so that a wrong name costs as much time as
/// a wrong password and response times do not reveal which names exist.
fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| password::hash(&super::token::generate()).unwrap_or_default())
}

fn back_to_login(error: &str, next: &str) -> Response {
    Redirect::to(&format!("/login?error={}&next={}", encode(error), encode(next))).into_response()
}

pub async fn login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    session: Session,
    Form(form): Form<LoginForm>,
) -> Result<Response, ApiError> {
    let next = app::pages::login::safe_next(form.next.clone());
    let name = form.username.trim().to_string();
    let client = state.auth.client_address(peer.ip(), &headers);
    // Counted before the hash runs; held (a password-check slot) until the check is done.
    let _attempt = match state.throttle.begin(&name, client) {
        Ok(a) => a,
        Err(throttle::Refusal::Throttled(wait)) => {
            tracing::warn!(user = %name, addr = %client, "sign-in throttled");
            // Rounded up: a client that waits as told is not refused again.
            let secs = (wait.as_secs_f64().ceil() as u64).max(1);
            return Err(ApiError::TooMany { message: format!("too many failed sign-ins; try again in {secs} s"), retry_after_secs: secs });
        }
        Err(throttle::Refusal::Busy) => {
            return Err(ApiError::Busy { message: "too many sign-ins at once; try again in a moment".into(), retry_after_secs: 1 });
        }
    };
    let user = state.store.user_by_name(&name).await?;
    let stored = user.as_ref().map(|u| u.password_hash.clone());
    let typed = form.password;
    let matches = tokio::task::spawn_blocking(move || password::verify(&typed, stored.as_deref().unwrap_or_else(|| decoy_hash())))
        .await
        .map_err(|e| ApiError::Internal(format!("password check: {e}")))?;
    let user = match user {
        Some(u) if matches && u.disabled_at.is_none() => u,
        _ => {
            tracing::info!(user = %name, addr = %client, "sign-in failed");
            return Ok(back_to_login("wrong user name or password", &next));
        }
    };
    state.throttle.succeeded(&name, client);
    start_session(&session, user.id).await?;
    tracing::info!(user = %user.username, "signed in");
    Ok(Redirect::to(&next).into_response())
}

/// Gives the browser a fresh session id, then binds the user to it.
pub async fn start_session(session: &Session, user_id: i64) -> Result<(), ApiError> {
    let err = |e: tower_sessions::session::Error| ApiError::Internal(format!("session store: {e}"));
    session.cycle_id().await.map_err(err)?;
    session.insert(SESSION_USER, SessionUser { user_id, login_at: store::now_ms() }).await.map_err(err)
}

pub async fn logout(session: Session) -> Result<Response, ApiError> {
    session.flush().await.map_err(|e| ApiError::Internal(format!("session store: {e}")))?;
    Ok(Redirect::to("/login").into_response())
}
