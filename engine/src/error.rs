//! What can go wrong in the engine, said by kind so that each caller answers it right: the server maps
//! the kinds to HTTP statuses (400, 409, 404, 502, 503, 500), the CLI to its messages.

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request is not valid; the message names the field and the problem.
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

/// A checking step's message (the launch rules, the suite's fingerprint checks): the request is not valid.
impl From<String> for EngineError {
    fn from(message: String) -> Self {
        EngineError::Invalid(message)
    }
}

impl From<&str> for EngineError {
    fn from(message: &str) -> Self {
        EngineError::Invalid(message.to_string())
    }
}

pub type EngineResult<T> = Result<T, EngineError>;
