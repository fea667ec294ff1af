//! The finelog client against a real finelog server (finelog's own EmbeddedServer, from the venv that
//! `scripts/setup.sh --test` makes), with the reference `zephyr.stage` rows written by finelog's own
//! Python client: what Arbiter reads back must be those rows.

use crate::common;

use common::finelog::FinelogServer;
use engine::queue::finelog::Finelog;
use judge::pipeline::rows::StageRow;

const ROWS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../judge/tests/data/zephyr_stage_rows_subprocess_runner.json");

#[tokio::test]
async fn stage_rows_come_back_from_a_real_finelog_as_written() {
    let server = FinelogServer::start(Some(ROWS));
    let expected: Vec<StageRow> = judge::pipeline::rows::parse_rows(ROWS, &std::fs::read_to_string(ROWS).unwrap()).unwrap();
    let mut ids: Vec<String> = expected.iter().map(|r| r.execution_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert!(ids.len() >= 2, "the reference has several executions");

    let finelog = Finelog::new(&server.url).unwrap();
    let got = finelog.stage_rows(&ids).await.unwrap();
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!((&g.execution_id, &g.stage_name, &g.status), (&e.execution_id, &e.stage_name, &e.status));
        assert_eq!(
            (g.cpu_time_total, g.elapsed, g.items, g.bytes_processed, g.mem_peak_bytes_max),
            (e.cpu_time_total, e.elapsed, e.items, e.bytes_processed, e.mem_peak_bytes_max)
        );
        assert_eq!((g.total_shards, g.cpu_pct_avg, g.mem_bytes_avg), (e.total_shards, e.cpu_pct_avg, e.mem_bytes_avg));
        assert!(g.seq.is_some(), "finelog's own sequence number is kept");
    }

    // Only the asked executions come back.
    let one = finelog.stage_rows(&ids[..1]).await.unwrap();
    assert!(!one.is_empty() && one.iter().all(|r| r.execution_id == ids[0]));
    assert!(finelog.stage_rows(&["20991231-000000-00000000".into()]).await.unwrap().is_empty());
}

#[tokio::test]
async fn bad_ids_never_reach_the_sql_and_failures_say_what_happened() {
    let server = FinelogServer::start(None);
    let finelog = Finelog::new(&server.url).unwrap();
    assert!(finelog.stage_rows(&["20261129-072203-da99fe05".into()]).await.unwrap().is_empty(), "no table yet: no rows");
    for evil in ["x' OR '1'='1", "20261129-072203-da99fe05'; DROP TABLE x; --", "Dedup-20261129-072203-da99fe05"] {
        let e = finelog.stage_rows(&[evil.to_string()]).await.unwrap_err().to_string();
        assert!(e.contains("is not a Zephyr execution id"), "{evil}: {e}");
    }
    let e = finelog.query("SELECT nonsense FROM nowhere").await.unwrap_err().to_string();
    assert!(e.starts_with("finelog refused the query"), "{e}");
    drop(server);

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gone = Finelog::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let e = gone.stage_rows(&["20261129-072203-da99fe05".into()]).await.unwrap_err().to_string();
    assert!(e.contains("cannot be reached"), "{e}");
    assert!(Finelog::new("https://finelog.example.com").unwrap_err().to_string().contains("http://"));
}
