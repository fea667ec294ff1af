//! Databases Arbiter must not write to are refused at start-up, before anything is written: another
//! program's SQLite file, another program's PostgreSQL schema, and an SQLite file that fails its
//! integrity check.

use store::{Store, StoreError};

fn sqlite_url(path: &std::path::Path) -> String {
    store::DatabaseUrl::sqlite_file(path)
}

async fn tables(url: &str) -> Vec<String> {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    let t = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetch_all(&pool).await.unwrap();
    pool.close().await;
    t
}

#[tokio::test]
async fn another_programs_sqlite_file_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.db");
    let url = sqlite_url(&path);
    let pool = sqlx::SqlitePool::connect(&format!("{url}?mode=rwc")).await.unwrap();
    sqlx::query("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)").execute(&pool).await.unwrap();
    pool.close().await;
    let err = Store::open(&url).await.unwrap_err();
    assert!(matches!(err, StoreError::Foreign(_)), "{err}");
    assert!(err.to_string().contains("customers"), "{err}");
    assert_eq!(tables(&url).await, vec!["customers".to_string()], "nothing was written to it");
}

#[tokio::test]
async fn an_empty_file_and_arbiters_own_open() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir.path().join("arbiter.db"));
    Store::open(&url).await.unwrap().close().await;
    // Again: its own tables are no reason to refuse.
    Store::open(&url).await.unwrap().close().await;
}

#[tokio::test]
async fn a_damaged_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("arbiter.db");
    let url = sqlite_url(&path);
    let store = Store::open(&url).await.unwrap();
    if let Store::Sqlite(pool) = &store {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await.unwrap();
    }
    store.close().await;
    // Overwrite the middle of the file (past the header page) with noise: pages of tables and indexes.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8 * 4096, "{} bytes", bytes.len());
    let half = bytes.len() / 2;
    for (i, b) in bytes.iter_mut().enumerate().skip(4096).take(half) {
        *b = (i * 7 % 251) as u8;
    }
    std::fs::write(&path, bytes).unwrap();
    // Refused at connect (SQLite reads the schema there) or by the integrity check: either way the
    // server does not start on it.
    let err = Store::open(&url).await.unwrap_err();
    assert!(err.to_string().contains("integrity check") || err.to_string().contains("malformed"), "{err}");
}

#[tokio::test]
async fn another_programs_postgres_schema_is_refused_untouched() {
    let (url, name) = store::testing::TestDb::empty_postgres().await;
    let url = url.as_str();
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    sqlx::query("CREATE TABLE customers (id INTEGER PRIMARY KEY)").execute(&pool).await.unwrap();
    let err = Store::open(url).await.unwrap_err();
    assert!(matches!(err, StoreError::Foreign(_)), "{err}");
    let migrations: i64 = sqlx::query_scalar("SELECT count(*) FROM information_schema.tables WHERE table_name = '_sqlx_migrations'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(migrations, 0, "no migrations table was made");
    pool.close().await;
    store::testing::TestDb::drop_database(&name).await;
}

/// Kept true by a check: no `… RETURNING` in the store is read with `fetch_one`/`fetch_optional` straight
/// on the pool (autocommit), where SQLite commits without reporting once the first row is read (a full
/// disk then hands out ids of rows never stored). Inside a transaction the commit reports it.
#[test]
fn returning_statements_are_read_to_their_end() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        for (i, _) in lines.iter().enumerate().filter(|(_, l)| l.contains("RETURNING")) {
            for next in lines.iter().skip(i).take(7) {
                if next.contains(".fetch_one(pool)") || next.contains(".fetch_optional(pool)") {
                    offenders.push(format!("{}:{}", entry.path().display(), i + 1));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "RETURNING read with fetch_one/fetch_optional on the pool: {offenders:?}");
}
