//! The API's one error type. Clients get a status and a message they can act on, as
//! `wire::error::JsonError` (`{"error": "..."}`, with `field` and `problem` when one value is at fault);
//! internal causes go to the log under the request id the client also sees.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use store::StoreError;

impl From<rights::Refused> for ApiError {
    fn from(r: rights::Refused) -> Self {
        match r {
            rights::Refused::Unauthorized(m) => ApiError::Unauthorized(m),
            rights::Refused::Forbidden(m) => ApiError::Forbidden(m),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    /// One of the request's values is not valid: 400, naming the field in the body.
    #[error(transparent)]
    Field(#[from] judge::FieldError),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{message}")]
    TooMany { message: String, retry_after_secs: u64 },
    /// Busy now (e.g. every password-check slot taken): 503 with `Retry-After`.
    #[error("{message}")]
    Busy { message: String, retry_after_secs: u64 },
    #[error("{0}")]
    NotImplemented(String),
    /// Something the request needs is not running here (e.g. no finelog server).
    #[error("{0}")]
    Unavailable(String),
    /// A system the request went through answered with a failure (git, a cluster engine, finelog).
    #[error("{0}")]
    BadGateway(String),
    /// Logged in full; the client only learns that it happened.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) | ApiError::Field(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { what, key } => ApiError::NotFound(format!("no {what} {key}")),
            StoreError::Conflict(m) => ApiError::Conflict(m),
            other if other.is_disk_full() => {
                tracing::error!(error = %other, "the database's disk is full");
                ApiError::Unavailable("the database's disk is full: nothing was stored; try again once an admin has freed space".into())
            }
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// The engine says what kind of failure it met; this is where each kind gets its status.
impl From<engine::EngineError> for ApiError {
    fn from(e: engine::EngineError) -> Self {
        use engine::EngineError as E;
        match e {
            E::Field(f) => ApiError::Field(f),
            E::Invalid(m) => ApiError::BadRequest(m),
            E::Conflict(m) => ApiError::Conflict(m),
            E::NotFound(m) => ApiError::NotFound(m),
            E::Upstream(m) => ApiError::BadGateway(m),
            E::Unavailable(m) => ApiError::Unavailable(m),
            E::Store(e) => e.into(),
            E::Internal(m) => ApiError::Internal(m),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        ApiError::BadRequest(r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::BadRequest(r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            ApiError::Internal(detail) => {
                tracing::error!(%detail, "request failed");
                "internal error; the server log has the details under this response's x-request-id".to_string()
            }
            // However long what the request held, the answer quotes a bounded prefix of it.
            other => judge::text::clip(&other.to_string(), judge::text::MAX_MESSAGE),
        };
        let body = match &self {
            ApiError::Field(f) => wire::error::JsonError {
                error: message,
                field: Some(judge::text::clip(&f.field, judge::text::MAX_QUOTED)),
                problem: Some(judge::text::clip(&f.problem, judge::text::MAX_MESSAGE)),
            },
            _ => wire::error::JsonError::message(message),
        };
        let mut response = (status, Json(body)).into_response();
        match &self {
            ApiError::Unauthorized(_) => {
                response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::TooMany { retry_after_secs, .. } | ApiError::Busy { retry_after_secs, .. } => {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            _ => {}
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// A caller's value quoted in an error: a bounded prefix (`judge::text::quoted`, without its quotes).
pub fn quoted_prefix(text: &str) -> String {
    judge::text::clip(text, judge::text::MAX_QUOTED)
}
