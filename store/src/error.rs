use thiserror::Error;

/// What can go wrong in the store. Messages name the setting to change; none carries a password.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("DATABASE_URL {url:?} is not usable: {reason}. Use sqlite://PATH or postgres://USER@HOST:PORT/DB")]
    BadUrl { url: String, reason: String },
    #[error("cannot open the database at {url}: {reason}. Check DATABASE_URL (or --database-url)")]
    Unreachable { url: String, reason: String },
    #[error("cannot apply database migrations: {0}")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    /// The database holds tables but none of Arbiter's: another program's, refused before anything is
    /// written to it.
    #[error("the database holds tables that are not Arbiter's ({0}) and no record of Arbiter's migrations; refusing to write to it. Point DATABASE_URL at an empty database or Arbiter's own")]
    Foreign(String),
    /// SQLite's integrity check at start-up did not say ok.
    #[error("the database file fails SQLite's integrity check ({0}); restore it from a backup before starting")]
    Damaged(String),
    #[error("{what} {key} does not exist")]
    NotFound { what: &'static str, key: String },
    #[error("{0}")]
    Conflict(String),
    #[error("stored value is not valid: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
}

impl StoreError {
    /// The database could not write for lack of space (SQLite's SQLITE_FULL, PostgreSQL's disk_full).
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::Query(sqlx::Error::Database(db)) => matches!(db.code().as_deref(), Some("13") | Some("53100")),
            _ => false,
        }
    }

    /// Whether trying the same write again may succeed: the database away, busy, locked or full. A
    /// missing row, a broken constraint or an undecodable value stays so however often it is tried.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Unreachable { .. } => true,
            StoreError::Query(e) => match e {
                sqlx::Error::Database(db) => !(db.is_unique_violation() || db.is_foreign_key_violation() || db.is_check_violation()),
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed => true,
                _ => false,
            },
            _ => false,
        }
    }

    /// Maps a unique-key violation to `Conflict` with a readable message; other errors pass through.
    pub(crate) fn unique(err: sqlx::Error, message: impl FnOnce() -> String) -> StoreError {
        match &err {
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict(message()),
            _ => StoreError::Query(err),
        }
    }
}

impl From<judge::ParseVocabError> for StoreError {
    fn from(e: judge::ParseVocabError) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

/// A stored role that is none of viewer, launcher or admin: the database holds what Arbiter never wrote.
impl From<rights::UnknownRole> for StoreError {
    fn from(e: rights::UnknownRole) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}
