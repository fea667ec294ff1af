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

/// A refusal decided by `rights`: not signed in (401) or not allowed (403).
impl From<rights::Refused> for AppError {
    fn from(r: rights::Refused) -> Self {
        match r {
            rights::Refused::Unauthorized(m) => AppError::Unauthorized(m),
            rights::Refused::Forbidden(m) => AppError::Forbidden(m),
        }
    }
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

/// Server functions return `AppError` itself (JSON-encoded on the wire), so a page gets the kind the
/// server meant; only a failure of the call itself (network, encoding) arrives through here.
impl FromServerFnError for AppError {
    type Encoder = leptos::server_fn::codec::JsonEncoding;

    fn from_server_fn_error(e: ServerFnErrorErr) -> Self {
        match e {
            ServerFnErrorErr::ServerError(message) => AppError::Server(message),
            other => AppError::Server(format!("the server could not be reached ({other})")),
        }
    }
}

impl AppError {
    /// A request that is not valid (answered with 400), shown as "That request is not valid".
    pub fn bad_request(message: impl std::fmt::Display) -> AppError {
        #[cfg(feature = "ssr")]
        crate::auth::set_status(400);
        AppError::BadRequest(message.to_string())
    }
}

/// The store, in a server function (the server provides it in context).
#[cfg(feature = "ssr")]
pub fn store() -> Result<store::Store, AppError> {
    use_context::<store::Store>().ok_or_else(|| AppError::Server("the store is not available".into()))
}

/// Maps a store error to what the page shows, logging the cause: "`what` could not be read".
#[cfg(feature = "ssr")]
pub fn read_failed(what: &'static str) -> impl Fn(store::StoreError) -> AppError + Copy {
    move |e| {
        tracing::error!(error = %e, "reading {what} failed");
        AppError::Server(format!("{what} could not be read; the server log has the details"))
    }
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
