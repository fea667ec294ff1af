//! What can go wrong in the engine, said by kind so that each caller answers it right: the server maps
//! the kinds to HTTP statuses (400, 409, 404, 502, 503, 500), the CLI to its messages. There is no
//! conversion from a bare string: each `?` on a string error chooses its kind (`Invalid`, `Upstream`,
//! `Internal`), so a git failure is never answered as the request's fault.

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// One of the request's values is not valid: the field and the problem (`judge::FieldError`).
    #[error(transparent)]
    Field(#[from] judge::FieldError),
    /// The request is not valid as a whole (no one field is to blame); the message says why.
    #[error("{0}")]
    Invalid(String),
    /// The request is valid but the experiment's state does not allow it (already ended, still running).
    #[error("{0}")]
    Conflict(String),
    /// What it names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A system Arbiter depends on answered with a failure: git, the cluster engine, finelog.
    #[error("{0}")]
    Upstream(String),
    /// This server cannot do it as configured (no finelog server for a pipeline launch).
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A fault of Arbiter's own (a stored value it cannot read).
    #[error("{0}")]
    Internal(String),
}

impl EngineError {
    /// A field's problem: `EngineError::field("warm_up", "use 0–3 …")`.
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> EngineError {
        EngineError::Field(judge::FieldError::new(field, problem))
    }
}

pub type EngineResult<T> = Result<T, EngineError>;
