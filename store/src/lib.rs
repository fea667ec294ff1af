//! Arbiter's store: one API over SQLite (the embedded default) and PostgreSQL.
//!
//! Every query is written once, with `$n` placeholders that both backends accept, and run on whichever
//! pool the [`Store`] holds (see [`on_pool!`]). Times are Unix epoch milliseconds; JSON documents are TEXT.
//! One file per table family.

pub mod artifacts;
pub mod bisections;
pub mod claim;
mod connect;
pub mod details;
mod error;
pub mod experiments;
pub mod notifications;
pub mod observations;
pub mod people;
pub mod schedules;
pub mod suites;
/// Throwaway databases for tests (SQLite in a temp dir, or a fresh PostgreSQL database). Always built:
/// a feature only the tests turned on made `cargo test` and `cargo build` compile the store, and every
/// crate above it, twice.
pub mod testing;
pub mod trends;
pub mod trials;
pub mod verdicts;

pub use connect::{redact_url, DatabaseUrl};
pub use error::StoreError;

use sqlx::migrate::Migrator;
use sqlx::{PgPool, SqlitePool};

pub(crate) static SQLITE_MIGRATOR: Migrator = sqlx::migrate!("../migrations/sqlite");
pub(crate) static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("../migrations/postgres");

/// A handle on the database; cheap to clone (it holds a connection pool).
#[derive(Clone, Debug)]
pub enum Store {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs the same query code on whichever pool the store holds: `on_pool!(self, pool => query.fetch_all(pool).await)`.
/// The body is compiled once per backend, so a query that one backend cannot decode fails the build.
#[macro_export]
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match $store {
            $crate::Store::Sqlite($pool) => $body,
            $crate::Store::Postgres($pool) => $body,
        }
    };
}

/// What `/readyz` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub backend: &'static str,
    pub applied_migrations: usize,
    pub known_migrations: usize,
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        self.applied_migrations == self.known_migrations
    }
}

impl Store {
    /// Which backend this is: "sqlite" or "postgres".
    pub fn backend(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }

    fn migrator(&self) -> &'static Migrator {
        match self {
            Store::Sqlite(_) => &SQLITE_MIGRATOR,
            Store::Postgres(_) => &POSTGRES_MIGRATOR,
        }
    }

    /// Applies the migrations this build knows and the database has not seen yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.check_before_writing().await?;
        let migrator = self.migrator();
        on_pool!(self, pool => migrator.run(pool).await).map_err(StoreError::Migrate)
    }

    /// Refuses a database Arbiter must not write to: one whose tables are another program's (checked
    /// before the migrations table is created), and an SQLite file that fails `PRAGMA quick_check`.
    pub async fn check_before_writing(&self) -> Result<(), StoreError> {
        let tables: Vec<String> = match self {
            Store::Sqlite(pool) => {
                let verdict: Vec<String> = sqlx::query_scalar("PRAGMA quick_check").fetch_all(pool).await?;
                if verdict.first().map(String::as_str) != Some("ok") {
                    return Err(StoreError::Damaged(judge::text::clip(&verdict.join("; "), 200)));
                }
                sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
                    .fetch_all(pool)
                    .await?
            }
            Store::Postgres(pool) => {
                sqlx::query_scalar(
                    "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name",
                )
                .fetch_all(pool)
                .await?
            }
        };
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
            let more = if tables.len() > 5 { format!(" and {} more", tables.len() - 5) } else { String::new() };
            return Err(StoreError::Foreign(format!("{}{more}", shown.join(", "))));
        }
        Ok(())
    }

    /// The database answers and every migration this build knows is applied.
    pub async fn readiness(&self) -> Result<Readiness, StoreError> {
        let known: Vec<i64> = self.migrator().iter().filter(|m| !m.migration_type.is_down_migration()).map(|m| m.version).collect();
        let applied: Vec<i64> = on_pool!(self, pool => {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success = TRUE").fetch_all(pool).await
        })?;
        Ok(Readiness {
            backend: self.backend(),
            applied_migrations: known.iter().filter(|v| applied.contains(v)).count(),
            known_migrations: known.len(),
        })
    }

    /// Closes every pooled connection (graceful shutdown).
    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await)
    }
}

/// The one row an `INSERT/UPDATE … RETURNING` gave, read with `fetch_all` — never `fetch_one`: on SQLite a
/// statement left after its first row commits without reporting, so on a full disk the caller got an id
/// for a row that was never stored (found by filling the data dir's disk: `POST /api/v1/tokens` answered
/// 201 with a secret three times while storing nothing). Read to its end, the failure is the caller's.
pub(crate) fn one_row<T>(rows: Vec<T>) -> Result<T, sqlx::Error> {
    rows.into_iter().next().ok_or(sqlx::Error::RowNotFound)
}

/// Now, as the store keeps times: Unix epoch milliseconds.
pub fn now_ms() -> i64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
