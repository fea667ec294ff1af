//! The experiment page's data: one server function gathers the summary, arms, trials, the latest
//! verdict's report with its charts (drawn on the server), and the experiment's files.

use wire::progress::JsonTrialRow;
use crate::pages::history::ExperimentSummary;
use crate::report::{ChartView, StoredReport};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmView {
    pub name: String,
    pub role: String,
    pub git_ref: Option<String>,
    pub sha: Option<String>,
    pub config_diff: Option<String>,
    /// `control`, `t0`, `t1`…: the arm's colour class, the same as in the charts.
    pub colour: String,
}


#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileView {
    /// Relative to the experiment's directory.
    pub path: String,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentView {
    pub summary: ExperimentSummary,
    pub arms: Vec<ArmView>,
    pub fingerprint: Vec<(String, String)>,
    /// What judged it, as short labelled lines ("margins", "CPU ±2 %, …"); empty before a verdict.
    pub noise: Vec<(String, String)>,
    /// How its stages were tested (the method's family and analyses), for a details line.
    pub tested: Option<String>,
    pub trials: Vec<JsonTrialRow>,
    /// The verdict's reasons, most important first.
    pub reasons: Vec<String>,
    pub report: Option<StoredReport>,
    pub charts: Vec<ChartView>,
    /// Charts drawn on a log axis.
    pub log: bool,
    pub files: Vec<FileView>,
    /// A live share link exists, or the reader came through one (of this experiment or of a bisection it
    /// is a step of): the page may carry a preview (OpenGraph) of its verdict and says it is shared.
    pub shared: bool,
    /// The caller may create and revoke share links (the launcher or an admin).
    pub may_share: bool,
    /// The live share links, for who may share (empty otherwise).
    pub share_links: Vec<wire::share::JsonShareLink>,
    /// The experiment still runs and the caller launched it or is an admin.
    pub may_cancel: bool,
    /// The experiment was launched from a suite, has ended, and the caller may launch.
    pub may_rerun: bool,
    /// Imported from files (`arbiter import`): Arbiter judged it but did not run it.
    pub imported: bool,
    /// A baseline run (measured, not compared).
    pub baseline: bool,
    /// The baseline run reused as the control.
    pub reused_baseline: Option<i64>,
    /// A warp experiment's matrix in words, and whether its launch set it.
    pub warp_matrix: Option<(String, bool)>,
    /// Every verdict it has had, newest first (the first is the one shown).
    pub verdicts: Vec<VerdictEntry>,
    /// The version of the judging method that reached the shown verdict, and the current one.
    pub method_version: Option<u32>,
    pub current_method: u32,
    /// A pipeline verdict of an older method, and the caller may launch: it may be re-judged.
    pub may_rejudge: bool,
    /// A calibration: the profile it fed.
    pub calibration: Option<CalibrationView>,
    /// An adaptive experiment that has not ended: its pairs and latest look (the live section's start).
    pub adaptive: Option<super::JsonAdaptiveProgress>,
    /// A judged A/B of two commits, and the caller may launch: "Find the commit" between them.
    pub bisect: Option<crate::pages::bisection::start::BisectOffer>,
    /// The bisections of this experiment's range (its control's commit to its treatment's): id, status.
    pub bisections: Vec<(i64, String)>,
    /// The reader is signed in (a share link's visitor cannot ask for a PR comment).
    pub reader_signed_in: bool,
}

/// One verdict the experiment has had (a re-judged experiment has several, newest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictEntry {
    pub verdict: judge::Verdict,
    pub method_version: u32,
    pub judged_at: i64,
    /// Who re-judged it; `None` for the experiment's own end (or an import).
    pub judged_by: Option<String>,
    pub reasons: Vec<String>,
}

/// What a calibration produced: the noise profile of its suite and fingerprint, as it stands now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationView {
    pub suite: String,
    /// `None`: no profile (the calibration failed, or an admin reset it since).
    pub profile_id: Option<i64>,
    pub trials: usize,
    pub calibrations: usize,
    pub trusted: bool,
    /// Per stage: name, trials, CPU spread %, summed elapsed spread %.
    pub stages: Vec<(String, usize, f64, f64)>,
}

/// Most files listed on the page; the rest stay downloadable by path.
#[cfg(feature = "ssr")]
const MAX_FILES: usize = 200;

#[cfg(feature = "ssr")]
fn colour(role: &str, treatment_index: usize) -> String {
    if role == "control" {
        "control".into()
    } else {
        format!("t{}", treatment_index % 4)
    }
}

/// The trials as the page's table shows them; `arms` are (id, name, role) in position order, which
/// gives each its colour. The page and the live progress events (while it runs) both use it.
#[cfg(feature = "ssr")]
pub fn trial_views(arms: &[(i64, String, String)], trials: Vec<store::trials::Trial>) -> Vec<JsonTrialRow> {
    let mut treatments = 0;
    let colours: Vec<String> = arms
        .iter()
        .map(|(_, _, role)| {
            let c = colour(role, treatments);
            treatments += usize::from(role != "control");
            c
        })
        .collect();
    let arm_of = |arm_id: i64| arms.iter().position(|a| a.0 == arm_id).map(|i| (arms[i].1.clone(), colours[i].clone())).unwrap_or_default();
    trials
        .into_iter()
        .map(|t| {
            let (arm, colour) = arm_of(t.arm_id);
            JsonTrialRow {
                seq: t.seq,
                arm,
                colour,
                cell: t.cell,
                attempt: t.attempt,
                state: t.state.as_str().to_string(),
                started_at: t.started_at,
                finished_at: t.finished_at,
                job: match (t.job_id.as_deref().map(super::shown_job), t.engine_state) {
                    (Some(j), Some(e)) => format!("{j} ({e})"),
                    (Some(j), None) => j.to_string(),
                    (None, _) => String::new(),
                },
                // A trial beside heavy load says so where its reason stands.
                note: [
                    t.infra_reason.map(|r| r.as_str().to_string()),
                    t.detail,
                    t.host.as_ref().and_then(|h| h.heavy_load()).map(|why| format!("beside heavy load: {why}")),
                ]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(": "),
                pair: t.repeat_index,
                position: t.position,
                warm_up: t.role == judge::TrialRole::WarmUp,
            }
        })
        .collect()
}

/// Files under `dir`, relative, sorted, at most `MAX_FILES`; hidden names are skipped.
#[cfg(feature = "ssr")]
fn list_files(dir: &std::path::Path) -> Vec<FileView> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Ok(meta) = e.metadata() else { continue };
            if name.starts_with('.') || meta.file_type().is_symlink() {
                continue;
            }
            if meta.is_dir() {
                stack.push(e.path());
            } else if let Ok(rel) = e.path().strip_prefix(dir) {
                out.push(FileView { path: rel.to_string_lossy().to_string(), size: meta.len() });
            }
        }
        if out.len() > MAX_FILES * 4 {
            break;
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.truncate(MAX_FILES);
    out
}

#[cfg(feature = "ssr")]
fn noise_words(report: Option<&StoredReport>, profile: Option<&store::details::ProfileUsed>) -> Vec<(String, String)> {
    use crate::format::utc_minutes;
    let line = |k: &str, v: String| (k.to_string(), v);
    match report {
        Some(StoredReport::Pipeline(r)) => {
            let t = &r.thresholds;
            let spread = match profile {
                Some(p) => format!("noise profile #{} from {} same-code trials (updated {})", p.id, p.trials, utc_minutes(p.updated_at)),
                None if r.method.is_some() && t.source == "uncalibrated" => {
                    format!("{}: spreads from the run's own trials (the default widens them where too few)", t.source)
                }
                // A profile the report was judged with but the store does not hold (an import's `--noise`).
                None if r.method.is_some() => format!("{}: given with the report, pooled with the run's own spreads", t.source),
                None => format!("{} thresholds", t.source),
            };
            let (first, margins) = match &r.method {
                Some(_) => ("margins", format!("CPU ±{} %, summed elapsed ±{} %", t.cpu_pct, t.elapsed_pct)),
                None => ("thresholds", format!("CPU ±{} %, summed elapsed ±{} %", t.cpu_pct, t.elapsed_pct)),
            };
            let mut lines = vec![
                line(first, margins),
                line("floors", format!("a stage under {} CPU-s or {} s is not tested", t.cpu_floor_s, t.elapsed_floor_s)),
                line("work", format!("items and bytes must match within ±{} %", t.equivalence_tolerance_pct)),
                line("spread", spread),
            ];
            // An adaptive (sequential) run: how many pairs it took and why it stopped.
            if let Some(q) = &r.sequential {
                let ended = if q.stopped { "stopped" } else { "not stopped" };
                lines.push(line("pairs", format!("{} of {} used ({ended}): {}", q.pairs_used, q.pairs_given, q.stop_reason)));
            }
            lines
        }
        Some(StoredReport::Warp { gate, .. }) => {
            vec![line("budgets", format!("FAIL beyond {} %, WARN beyond {} % (relative to the baseline)", gate.fail_pct, gate.warn_pct))]
        }
        None => Vec::new(),
    }
}

#[server(prefix = "/fn", endpoint = "experiment")]
pub async fn load_experiment(id: i64, #[server(default)] log: bool) -> Result<ExperimentView, crate::error::AppError> {
    let not_found = || {
        crate::auth::set_status(404);
        crate::error::AppError::NotFound(format!("there is no experiment {id} you can see"))
    };
    // A share link for another experiment must not learn whether this one exists.
    let principal = crate::auth::principal();
    if !principal.can_read_experiment(id) {
        return Err(not_found());
    }
    let store = crate::error::store()?;
    let ctx = crate::context::server_context()?;
    let failed = crate::error::read_failed("the experiment");
    let summary = match store.experiment_summary(id).await {
        Ok(s) => s,
        Err(store::StoreError::NotFound { .. }) => return Err(not_found()),
        Err(e) => return Err(failed(e)),
    };
    let detail = store.experiment_detail(id).await.map_err(failed)?;
    let trials = store.trials(id).await.map_err(failed)?;
    let (reasons, report) = match store.latest_verdict(id).await.map_err(failed)? {
        Some((_, reasons, json)) => (reasons, StoredReport::from_json(summary.kind, &json)),
        None => (Vec::new(), None),
    };
    let verdicts: Vec<VerdictEntry> = store
        .verdicts(id)
        .await
        .map_err(failed)?
        .into_iter()
        .map(|v| VerdictEntry {
            verdict: v.verdict,
            method_version: v.method_version,
            judged_at: v.judged_at,
            judged_by: v.judged_by,
            reasons: v.reasons,
        })
        .collect();
    let current_method = match summary.kind {
        judge::ExperimentKind::Pipeline => judge::pipeline::method::METHOD_VERSION,
        judge::ExperimentKind::Warp => 1,
    };
    let method_version = verdicts.first().map(|v| v.method_version);
    let calibration = match (detail.calibration, summary.suite.clone()) {
        (true, Some(suite)) => {
            let profiles = match store.suite_by_name(&suite).await {
                Ok(s) => store.noise_profiles(s.id).await.map_err(failed)?,
                Err(_) => Vec::new(),
            };
            let found = profiles.into_iter().find(|p| p.fingerprint == detail.fingerprint);
            let parsed =
                found.as_ref().and_then(|p| serde_json::from_value::<judge::pipeline::noise::NoiseProfile>(p.profile.clone()).ok());
            Some(CalibrationView {
                suite,
                profile_id: found.as_ref().map(|p| p.id),
                trials: parsed.as_ref().map_or(0, |p| p.trials),
                calibrations: parsed.as_ref().map_or(0, |p| p.calibrations),
                trusted: parsed.as_ref().is_some_and(|p| p.trusted),
                stages: parsed
                    .map(|p| p.stages.iter().map(|(n, s)| (n.clone(), s.cpu.n, 100.0 * s.cpu.raw().0, 100.0 * s.elapsed.raw().0)).collect())
                    .unwrap_or_default(),
            })
        }
        _ => None,
    };
    let scale = if log { charts::Scale::Log } else { charts::Scale::Linear };
    let charts = report.as_ref().map(|r| r.charts(scale)).unwrap_or_default();
    let mut treatments = 0;
    let arms: Vec<ArmView> = detail
        .arms
        .iter()
        .map(|a| {
            let c = colour(&a.role, treatments);
            if a.role != "control" {
                treatments += 1;
            }
            ArmView {
                name: a.name.clone(),
                role: a.role.clone(),
                git_ref: a.git_ref.clone(),
                sha: a.sha.clone(),
                config_diff: a.config_diff.clone(),
                colour: c,
            }
        })
        .collect();
    let ended =
        matches!(summary.status, judge::ExperimentStatus::Judged | judge::ExperimentStatus::Errored | judge::ExperimentStatus::Cancelled);
    let adaptive = if ended {
        None
    } else {
        let (plan, _) = store.experiment_plan(id).await.map_err(failed)?;
        let look = store.look(id).await.map_err(failed)?;
        super::adaptive_progress(&plan, &trials, look.as_ref(), true)
    };
    let roles: Vec<(i64, String, String)> = detail.arms.iter().map(|a| (a.id, a.name.clone(), a.role.clone())).collect();
    let trials = trial_views(&roles, trials);
    let dir = ctx.data_dir.join("experiments").join(id.to_string());
    // A directory walk: off the async threads.
    let mut files = tokio::task::spawn_blocking(move || list_files(&dir)).await.unwrap_or_default();
    // Only what this visitor may open (a share link without the files scope: the reports).
    files.retain(|f| principal.may_read_file(id, &f.path).is_ok());
    use crate::auth::ExperimentAct as Act;
    let may = |act| principal.may(act, id, detail.launched_by_id).is_ok();
    let may_share = may(Act::Share);
    let share_links =
        if may_share { store.share_links(id).await.map_err(crate::error::read_failed("the share links"))? } else { Vec::new() };
    let bisect = match (&report, summary.suite.clone(), detail.arms.as_slice()) {
        (Some(r), Some(suite), [control, treatment])
            if summary.status == judge::ExperimentStatus::Judged
                && detail.launched
                && !detail.calibration
                && !detail.baseline
                && may(Act::Bisect) =>
        {
            let metrics = bisect_metrics(r);
            match (&control.sha, &treatment.sha, metrics.first().cloned()) {
                (Some(good), Some(bad), Some((selected, _))) if good != bad => Some(crate::pages::bisection::start::BisectOffer {
                    suite,
                    good: good.clone(),
                    bad: bad.clone(),
                    metrics,
                    selected,
                    fingerprint: detail.fingerprint.to_string(),
                    experiment_id: Some(id),
                }),
                _ => None,
            }
        }
        _ => None,
    };
    let bisections = match (summary.suite.as_deref(), detail.arms.as_slice()) {
        (Some(suite), [control, treatment]) => match (&control.sha, &treatment.sha) {
            (Some(good), Some(bad)) if good != bad => store
                .bisections_of_range(suite, good, bad, "")
                .await
                .map_err(failed)?
                .into_iter()
                .map(|b| (b.bisection.id, b.bisection.status))
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    Ok(ExperimentView {
        bisect,
        bisections,
        reader_signed_in: matches!(principal, crate::auth::Principal::User { .. }),
        noise: if detail.calibration { Vec::new() } else { noise_words(report.as_ref(), detail.noise_profile.as_ref()) },
        tested: match &report {
            Some(StoredReport::Pipeline(r)) if !detail.calibration => Some(judge::pipeline::render::method_line(r)),
            _ => None,
        },
        summary,
        arms,
        fingerprint: crate::format::fingerprint_fields(&detail.fingerprint),
        trials,
        reasons,
        report,
        charts,
        log,
        files,
        shared: detail.live_shares > 0 || matches!(principal, crate::auth::Principal::Share { .. }),
        may_cancel: may(Act::Cancel) && !ended,
        may_rerun: may(Act::Rerun) && detail.launched && ended,
        imported: detail.imported,
        baseline: detail.baseline,
        reused_baseline: detail.reused_baseline,
        warp_matrix: detail.warp_matrix.clone(),
        may_share,
        share_links,
        may_rejudge: may(Act::Rejudge) && method_version.is_some_and(|v| v < current_method),
        calibration,
        verdicts,
        method_version,
        current_method,
        adaptive,
    })
}

/// The metrics a bisection from this report could follow, the moved ones first (the largest change first):
/// (spec, label).
#[cfg(feature = "ssr")]
fn bisect_metrics(report: &StoredReport) -> Vec<(String, String)> {
    use judge::pipeline::report::{fmt_pct, MetricOutcome};
    let mut out: Vec<(bool, f64, String, String)> = Vec::new();
    match report {
        StoredReport::Pipeline(r) => {
            for s in r.treatments.first().map(|a| a.stages.as_slice()).unwrap_or(&r.stages) {
                if s.cpu_below_floor || s.trials[1] == 0 {
                    continue;
                }
                let moved = matches!(s.cpu_outcome, MetricOutcome::Higher | MetricOutcome::Lower) && !s.cpu_negligible;
                let label = format!("CPU of {} ({}{})", s.stage, fmt_pct(s.cpu_change_pct), if moved { ", moved" } else { "" });
                out.push((moved, s.cpu_change_pct.abs(), format!("cpu:{}", s.stage), label));
            }
        }
        StoredReport::Warp { gate, .. } => {
            const BISECTABLE: [&str; 5] = ["reqps", "throughput", "latency", "p90-latency", "p99-latency"];
            let single = |w: &str| w.rsplit_once('/').is_some_and(|(x, s)| !x.contains(':') && (s == "sync-on" || s == "sync-off"));
            match &gate.noise {
                Some(n) => {
                    for row in n.rows.iter().filter(|r| BISECTABLE.contains(&r.metric.as_str()) && single(&r.workload)) {
                        let moved = matches!(row.verdict, judge::warp::noise::NoiseVerdict::Fail | judge::warp::noise::NoiseVerdict::Warn);
                        let change = row.change_pct.unwrap_or(0.0);
                        let label = format!("{} of {} ({} {})", row.metric, row.workload, row.verdict.label(), fmt_pct(change));
                        out.push((moved, change.abs(), format!("{}:{}", row.workload, row.metric), label));
                    }
                }
                None => {
                    for row in gate.rows.iter().filter(|r| BISECTABLE.contains(&r.metric.as_str()) && single(&r.workload)) {
                        let moved = matches!(row.verdict, judge::warp::gate::RowVerdict::Fail | judge::warp::gate::RowVerdict::Warn);
                        let label = format!("{} of {} ({} {})", row.metric, row.workload, row.verdict.label(), row.delta);
                        out.push((moved, row.regress.unwrap_or(0.0).abs(), format!("{}:{}", row.workload, row.metric), label));
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)));
    out.into_iter().map(|(_, _, spec, label)| (spec, label)).collect()
}
