//! migrations/sqlite and migrations/postgres must describe the same schema: the same migration files,
//! and after applying them the same tables, columns, nullability and indexes.

use std::collections::BTreeMap;
use store::testing::TestDb;
use store::{on_pool, Store};

type Schema = BTreeMap<String, Vec<(String, bool)>>;

fn migration_files(dir: &str) -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations/");
    let mut names: Vec<String> =
        std::fs::read_dir(format!("{root}{dir}")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

async fn sqlite_schema(store: &Store) -> (Schema, Vec<String>) {
    let Store::Sqlite(pool) = store else { unreachable!() };
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut schema = Schema::new();
    for t in tables {
        let cols: Vec<(String, bool)> =
            sqlx::query_as::<_, (String, i64, i64)>(&format!("SELECT name, \"notnull\", pk FROM pragma_table_info('{t}')"))
                .fetch_all(pool)
                .await
                .unwrap()
                .into_iter()
                .map(|(name, notnull, pk)| (name, notnull == 1 || pk == 1))
                .collect();
        schema.insert(t, cols);
    }
    let indexes = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .fetch_all(pool)
        .await
        .unwrap();
    (schema, indexes)
}

async fn postgres_schema(store: &Store) -> (Schema, Vec<String>) {
    let rows: Vec<(String, String, String)> = on_pool!(store, pool => sqlx::query_as(
        "SELECT table_name::text, column_name::text, is_nullable::text FROM information_schema.columns \
         WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations' ORDER BY table_name, ordinal_position",
    ).fetch_all(pool).await)
    .unwrap();
    let mut schema = Schema::new();
    for (t, c, nullable) in rows {
        schema.entry(t).or_default().push((c, nullable == "NO"));
    }
    let indexes = on_pool!(store, pool => sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' \
         AND indexname NOT LIKE '%_key' AND tablename <> '_sqlx_migrations' ORDER BY indexname",
    ).fetch_all(pool).await)
    .unwrap();
    (schema, indexes)
}

#[tokio::test]
async fn both_backends_have_the_same_schema() {
    assert_eq!(migration_files("sqlite"), migration_files("postgres"), "the same migration files, in the same order");

    let lite = TestDb::sqlite().await;
    let pg = TestDb::postgres().await;
    let (lite_schema, lite_indexes) = sqlite_schema(&lite.store).await;
    let (pg_schema, pg_indexes) = postgres_schema(&pg.store).await;
    for table in [
        "experiments",
        "arms",
        "trials",
        "stage_rows",
        "warp_rounds",
        "verdicts",
        "noise_profiles",
        "suites",
        "users",
        "api_tokens",
        "share_tokens",
        "audit_log",
        "artifacts",
    ] {
        assert!(lite_schema.contains_key(table), "sqlite lacks {table}");
    }
    assert_eq!(lite_schema, pg_schema, "tables, columns (in order) and NOT NULL agree");
    // SQLite names its UNIQUE-constraint indexes sqlite_autoindex_*; Postgres *_key: both are left out above.
    assert_eq!(lite_indexes, pg_indexes, "named indexes agree");
    assert!(lite_indexes.contains(&"experiments_history".to_string()));
    lite.cleanup().await;
    pg.cleanup().await;
}
