//! The app's one error type and the component that renders it. Messages are for users: the server logs
//! the details and sends only what a user can act on.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Server(String),
}

impl AppError {
    pub fn title(&self) -> &'static str {
        match self {
            AppError::NotFound(_) => "Not found",
            AppError::BadRequest(_) => "That request is not valid",
            AppError::Unauthorized(_) => "Sign in to see this",
            AppError::Forbidden(_) => "Your role does not allow this",
            AppError::Server(_) => "Something went wrong on the server",
        }
    }
}

impl From<ServerFnError> for AppError {
    fn from(e: ServerFnError) -> Self {
        match e {
            ServerFnError::ServerError(message) => {
                if let Some(m) = message.strip_prefix("bad request: ") {
                    AppError::BadRequest(m.to_string())
                } else if let Some(m) = message.strip_prefix("unauthorized: ") {
                    AppError::Unauthorized(m.to_string())
                } else if let Some(m) = message.strip_prefix("forbidden: ") {
                    AppError::Forbidden(m.to_string())
                } else if let Some(m) = message.strip_prefix("not found: ") {
                    AppError::NotFound(m.to_string())
                } else {
                    AppError::Server(message)
                }
            }
            other => AppError::Server(format!("the server could not be reached ({other})")),
        }
    }
}

/// The store, in a server function (the server provides it in context).
#[cfg(feature = "ssr")]
pub fn store() -> Result<store::Store, ServerFnError> {
    use_context::<store::Store>().ok_or_else(|| ServerFnError::new("the store is not available"))
}

/// Maps a store error to what the page shows, logging the cause: "`what` could not be read".
#[cfg(feature = "ssr")]
pub fn read_failed(what: &'static str) -> impl Fn(store::StoreError) -> ServerFnError + Copy {
    move |e| {
        tracing::error!(error = %e, "reading {what} failed");
        ServerFnError::new(format!("{what} could not be read; the server log has the details"))
    }
}

/// A bad-request error for server functions (answered with 400); [`AppError`] shows it as "That
/// request is not valid".
pub fn bad_request(message: impl std::fmt::Display) -> ServerFnError {
    #[cfg(feature = "ssr")]
    crate::auth::set_status(400);
    ServerFnError::new(format!("bad request: {message}"))
}

#[component]
pub fn ErrorView(error: AppError) -> impl IntoView {
    view! {
        <section class="error" role="alert">
            <h2>{error.title()}</h2>
            <p>{error.to_string()}</p>
        </section>
    }
}
