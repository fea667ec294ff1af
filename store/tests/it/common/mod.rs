//! What the store's test files share: each scenario run on both backends, and a sample experiment.

/// Runs each scenario once per backend: `<name>::sqlite` and `<name>::postgres`.
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let db = store::testing::TestDb::sqlite().await;
                super::$name(&db).await;
                db.cleanup().await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let db = store::testing::TestDb::postgres().await;
                super::$name(&db).await;
                db.cleanup().await;
            }
        }
    )+};
}

pub fn experiment(kind: judge::ExperimentKind, title: &str) -> store::experiments::InsertExperiment {
    store::testing::sample_experiment(kind, title)
}
