//! First run: when the store has no user, `serve` prints a one-time link to `/setup?token=…`; whoever
//! opens it first creates the first admin and is signed in. The token lives only in memory (as a hash)
//! and dies with its first use, with the first user created any other way, or with the process.

use super::{login::start_session, password};
use crate::api::error::ApiError;
use crate::auth::policy::encode;
use crate::state::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use store::people::Role;
use tower_sessions::Session;

#[derive(Deserialize)]
pub struct SetupForm {
    pub token: String,
    pub username: String,
    pub password: String,
    pub again: String,
}

pub async fn setup(State(state): State<AppState>, session: Session, Form(form): Form<SetupForm>) -> Result<Response, ApiError> {
    let retry = |error: &str| Redirect::to(&format!("/setup?token={}&error={}", encode(&form.token), encode(error))).into_response();
    if !state.setup.take_if(&form.token) {
        // The page says so in words (a used link, a restarted server), not a bare error document.
        return Ok(Redirect::to("/setup?used=1").into_response());
    }
    // From here on the link is spent; a fixable input error hands it back.
    let name = form.username.trim().to_string();
    let problem = if !super::users::valid_username(&name) {
        Some("use 1–64 letters, digits, '-', '_', '.' or '@' for the user name".to_string())
    } else if form.password != form.again {
        Some("the two passwords differ".to_string())
    } else {
        password::check_policy(&form.password).err()
    };
    if let Some(p) = problem {
        state.setup.give_back(&form.token);
        return Ok(retry(&p));
    }
    if state.store.count_users().await? > 0 {
        return Err(ApiError::Conflict("a user already exists; sign in instead".into()));
    }
    let pw = form.password.clone();
    let hash = tokio::task::spawn_blocking(move || password::hash(&pw)).await.map_err(|e| ApiError::Internal(e.to_string()))?;
    let hash = hash.map_err(ApiError::Internal)?;
    let id = state.store.insert_user(&name, &hash, Role::Admin).await?;
    state
        .store
        .audit(
            Some(id),
            "user.create",
            &format!("user:{id}"),
            None,
            &serde_json::json!({"name": name, "role": "admin", "via": "setup link"}),
        )
        .await?;
    start_session(&session, id).await?;
    tracing::info!(user = %name, "first admin created through the setup link");
    Ok(Redirect::to("/experiments").into_response())
}
