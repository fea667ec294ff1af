//! Opening a store from a URL, with errors that say what to change.

use crate::{Store, StoreError};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::str::FromStr;
use std::time::Duration;

/// A parsed `DATABASE_URL`.
#[derive(Debug, Clone)]
pub enum DatabaseUrl {
    Sqlite(SqliteConnectOptions),
    Postgres(PgConnectOptions),
}

impl DatabaseUrl {
    /// Parses `sqlite:…` or `postgres://…` / `postgresql://…`; anything else is a clear error.
    pub fn parse(url: &str) -> Result<DatabaseUrl, StoreError> {
        let bad = |reason: String| StoreError::BadUrl { url: redact_url(url), reason };
        if url.starts_with("sqlite:") {
            let opts = SqliteConnectOptions::from_str(url).map_err(|e| bad(e.to_string()))?;
            Ok(DatabaseUrl::Sqlite(
                opts.create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .foreign_keys(true)
                    .busy_timeout(Duration::from_secs(10)),
            ))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let opts = PgConnectOptions::from_str(url).map_err(|e| bad(e.to_string()))?;
            Ok(DatabaseUrl::Postgres(opts.application_name("arbiter")))
        } else {
            Err(bad("the scheme must be sqlite: or postgres://".into()))
        }
    }

    /// The SQLite URL for a file, e.g. `$ARBITER_DATA_DIR/arbiter.db`.
    pub fn sqlite_file(path: &std::path::Path) -> String {
        format!("sqlite://{}", path.display())
    }
}

impl Store {
    /// Connects and applies pending migrations (and fills what a migration added but could not compute,
    /// `fill_missing_news`): the one call a server or tool makes at start-up.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let store = Store::connect(url).await?;
        store.migrate().await?;
        store.fill_missing_news().await?;
        Ok(store)
    }

    /// Connects without migrating (tests of the migration path use this).
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        let unreachable = |e: sqlx::Error| StoreError::Unreachable { url: redact_url(url), reason: short_reason(&e) };
        match DatabaseUrl::parse(url)? {
            DatabaseUrl::Sqlite(opts) => {
                let pool = SqlitePoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(opts)
                    .await
                    .map_err(unreachable)?;
                Ok(Store::Sqlite(pool))
            }
            DatabaseUrl::Postgres(opts) => {
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(5))
                    .connect_with(opts)
                    .await
                    .map_err(unreachable)?;
                Ok(Store::Postgres(pool))
            }
        }
    }
}

/// The URL with any password replaced by `***`, safe for logs and error messages.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_string() };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match (authority.rfind('@'), authority.find(':')) {
        (Some(at), Some(colon)) if colon < at => {
            format!("{}{}:***{}", &url[..scheme_end + 3], &authority[..colon], &rest[at..])
        }
        _ => url.to_string(),
    }
}

/// sqlx's error text without its debug noise.
fn short_reason(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::PoolTimedOut => "timed out waiting for a connection".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact_url("postgres://bob:s3cret@db:5432/arbiter"), "postgres://bob:***@db:5432/arbiter");
        assert_eq!(redact_url("postgres://bob@db/arbiter"), "postgres://bob@db/arbiter");
        assert_eq!(redact_url("sqlite:///tmp/a.db"), "sqlite:///tmp/a.db");
        let err = DatabaseUrl::parse("mysql://bob:s3cret@db/x").unwrap_err().to_string();
        assert!(err.contains("bob:***@db") && !err.contains("s3cret"), "{err}");
        assert!(err.contains("sqlite:") && err.contains("postgres://"), "{err}");
    }

    #[test]
    fn schemes_are_recognised() {
        assert!(matches!(DatabaseUrl::parse("sqlite://x.db").unwrap(), DatabaseUrl::Sqlite(_)));
        assert!(matches!(DatabaseUrl::parse("sqlite::memory:").unwrap(), DatabaseUrl::Sqlite(_)));
        assert!(matches!(DatabaseUrl::parse("postgresql://u@h/d").unwrap(), DatabaseUrl::Postgres(_)));
        assert!(DatabaseUrl::parse("").is_err());
        assert!(DatabaseUrl::parse("postgres://u@h:notaport/d").is_err());
    }
}
