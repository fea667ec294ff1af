//! `arbiter rejudge`: the command-line door to re-judging (`engine::rejudge`).

use engine::rejudge::rejudge;
use judge::pipeline::method::METHOD_VERSION;
use judge::ExperimentKind;
use store::Store;

/// `arbiter rejudge`: every pipeline experiment whose latest verdict is of an older method (`--all`), or
/// the ones named (`--id`), judged again; `--dry-run` prints what would change and stores nothing.
pub async fn run(args: crate::cli::RejudgeArgs) -> Result<i32, String> {
    let (_, url) = args.store.resolve().map_err(|e| e.to_string())?;
    let store = Store::open(&url).await.map_err(|e| e.to_string())?;
    let result = rejudge_many(&store, &args).await;
    store.close().await;
    result
}

async fn rejudge_many(store: &Store, args: &crate::cli::RejudgeArgs) -> Result<i32, String> {
    let by = match &args.by {
        None => None,
        Some(name) => {
            Some(store.user_by_name(name).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("--by: there is no user {name:?}"))?.id)
        }
    };
    let ids: Vec<i64> = if args.all {
        store
            .judged_before(ExperimentKind::Pipeline, METHOD_VERSION)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    } else if args.id.is_empty() {
        return Err("name the experiments (--id N, repeatable) or give --all".into());
    } else {
        args.id.clone()
    };
    let (mut changed, mut failed) = (0, 0);
    let verb = if args.dry_run { "would be" } else { "is now" };
    for id in &ids {
        match rejudge(store, *id, by, args.dry_run).await {
            Ok(r) => {
                changed += usize::from(r.changed());
                let mark = if r.changed() { "changes" } else { "same" };
                println!(
                    "experiment {id}: {} (method v{}) {verb} {} (method v{}) — {mark}",
                    r.before.as_str(),
                    r.before_method,
                    r.after.as_str(),
                    r.after_method
                );
            }
            Err(e) => {
                failed += 1;
                println!("experiment {id}: not re-judged: {e}");
            }
        }
    }
    let what = if args.dry_run { "dry run, nothing stored" } else { "stored beside the earlier verdicts" };
    println!("rejudge: {} experiments, {changed} verdicts change, {failed} could not be judged ({what})", ids.len());
    Ok(if failed > 0 { 2 } else { 0 })
}
