//! `POST /api/v1/experiments`: a launch request, checked and resolved into a plan before anything is
//! stored or run. Every ref becomes a full SHA, the fingerprint is checked against the suite, the data
//! locality is found from the sample, and the argv of every trial is rendered.

use crate::launch::git::{is_safe_ref, RefError, Repo};
use crate::launch::plan::{plan, warm_ups};
use crate::EngineError;
use judge::FieldError;
use judge::launch_rules as rules;
use judge::units::short_sha as short;
use std::collections::BTreeMap;
use std::path::Path;
use suite::definition::{is_safe_value, Fingerprint, SuiteDefinition, TrialOrder};

pub use wire::plan::{AdaptivePlan, JsonLaunchPlan, PlannedArm, PlannedRun, ReusedBaseline};
pub use wire::launch::{JsonBudgets, JsonConfigDiff, JsonExemption, JsonExtraArm, JsonLaunch, JsonTrials, LatestWord, ReuseBaseline};


/// Where the plan's argv points for things only a launch knows.
pub struct RunContext<'a> {
    pub data_dir: &'a Path,
    /// Names the experiment in run tags and worktrees (`dry` for a dry run).
    pub label: String,
    pub finelog_url: String,
    /// `{python}`: the Python Arbiter is configured with, if any.
    pub python: Option<String>,
}

/// Checks the request and resolves it against the suite and its repository; `reused` is the baseline
/// run already found (and checked) for `reuse_baseline`.
pub async fn resolve(
    req: &JsonLaunch,
    suite: &SuiteDefinition,
    ctx: &RunContext<'_>,
    reused: Option<&ReusedBaseline>,
) -> Result<JsonLaunchPlan, EngineError> {
    for (field, r) in [("head", Some(&req.head)), ("base", req.base.as_ref())] {
        if let Some(r) = r {
            rules::check_ref(field, r)?;
        }
    }
    if let Some(t) = &req.title {
        rules::check_text("title", t, rules::TITLE_MAX)?;
    }
    let exemption = match &req.exemption {
        Some(e) => {
            rules::check_text("exemption.reason", &e.reason, rules::REASON_MAX)?;
            Some(e.reason.trim().to_string())
        }
        None => None,
    };
    // A suite whose default is "auto" still runs a fixed number where a launch cannot be adaptive.
    let order = req.order.unwrap_or(suite.defaults.order);
    let cannot_adapt = req.calibration || req.baseline || req.reuse_baseline.is_some() || order == TrialOrder::Blocked;
    let order_seed = crate::launch::plan::new_seed();
    let warm_up = match req.warm_up {
        Some(w) if w > suite::definition::MAX_WARM_UP => {
            return Err(EngineError::field("warm_up", format!("{w}: use 0–{} unmeasured trials before the first pair", suite::definition::MAX_WARM_UP)))
        }
        Some(w) if w > 0 && suite.kind == judge::ExperimentKind::Warp => {
            return Err(EngineError::field("warm_up", "a warp suite warms up inside each phase (its warm-up setting); leave it out"))
        }
        Some(w) => w,
        None => suite.warm_up(),
    };
    let choice = match (req.trials, suite.defaults.trials) {
        (Some(t), _) => t,
        (None, JsonTrials::Auto(_)) if cannot_adapt => JsonTrials::Fixed(FIXED_WHEN_NOT_ADAPTIVE),
        (None, t) => t,
    };
    rules::check_trials_choice(suite.kind, choice)?;
    let adaptive = adaptive_plan(req, suite, choice, order)?;
    // An adaptive launch plans its first look (two units); the engine adds the rest.
    let trials = choice.fixed().or(adaptive.as_ref().map(AdaptivePlan::first_look)).unwrap_or_default();
    if let Some(b) = req.budgets {
        if suite.kind != judge::ExperimentKind::Warp {
            return Err(EngineError::field("budgets", "only a warp suite has relative budgets"));
        }
        rules::check_budgets(b.fail_pct, b.warn_pct)?;
    }
    if req.calibration && (req.base.is_some() || !req.arms.is_empty() || trials < 2) {
        return Err(EngineError::field("calibration", "give `head` and at least 2 trials, and no `base` or extra arms (it runs one SHA)"));
    }
    if req.baseline && (req.base.is_some() || !req.arms.is_empty() || req.calibration || req.reuse_baseline.is_some()) {
        return Err(EngineError::field("baseline", "give `head` alone: no `base`, extra arms, calibration or reuse (a baseline runs one SHA)"));
    }
    if req.canary
        && (req.base.is_some() || !req.arms.is_empty() || req.calibration || req.baseline || req.reuse_baseline.is_some())
    {
        return Err(EngineError::field(
            "canary",
            "give `head` alone: a canary runs it against itself (no `base`, extra arms, calibration, baseline or reuse)",
        ));
    }
    if req.canary && suite.kind != judge::ExperimentKind::Pipeline {
        return Err(EngineError::field("canary", "a warp suite's same-code runs are its A/As (head and base the same); canaries are for pipeline suites"));
    }
    if req.reuse_baseline.is_some() && (req.base.is_some() || req.calibration) {
        return Err(EngineError::field("reuse_baseline", "the reused baseline is the control; leave out `base` and calibration"));
    }
    if (req.baseline || req.reuse_baseline.is_some()) && suite.kind == judge::ExperimentKind::Warp {
        return Err(EngineError::field("baseline", "a warp suite compares its arms phase by phase on one host; launch an A/B instead"));
    }
    if req.reuse_baseline.is_some() != reused.is_some() {
        return Err(EngineError::field("reuse_baseline", "no baseline run was found for it"));
    }
    if req.arms.len() > rules::MAX_EXTRA_ARMS {
        return Err(EngineError::field("arms", format!("{} extra arms; a launch names at most {}", req.arms.len(), rules::MAX_EXTRA_ARMS)));
    }
    for (i, arm) in req.arms.iter().enumerate() {
        rules::check_arm_name(&format!("arms[{i}].name"), &arm.name, req.arms[..i].iter().map(|a| a.name.as_str()))?;
        rules::check_ref(&format!("arm {:?} ref", arm.name), &arm.git_ref)?;
        check_config(&arm.name, arm.config.as_ref(), suite)?;
    }
    let fingerprint = suite.validate_fingerprint(&req.fingerprint)?;
    let locality = suite.locality_for(&fingerprint)?;

    // The suite's repository not answering is git's failure, not the request's.
    let repo = Repo::open(&suite.repository, ctx.data_dir).await.map_err(EngineError::Upstream)?;
    let head_sha = repo.resolve(&req.head).await.map_err(|e| e.at("head"))?;
    let (base_ref, base_sha) = match (&req.base, reused) {
        (_, Some(r)) => (format!("baseline #{} ({})", r.experiment_id, r.git_ref), r.sha.clone()),
        (Some(b), None) => (b.clone(), repo.resolve(b).await.map_err(|e| e.at("base"))?),
        _ if req.calibration || req.baseline => (String::new(), head_sha.clone()),
        (None, None) if req.canary => (req.head.clone(), head_sha.clone()),
        (None, None) => {
            // The suite's base branch not resolving is the suite's fault, not the request's.
            let branch = repo.resolve(&suite.base_branch).await.map_err(|e| match e {
                RefError::NoCommit(m) => EngineError::Unavailable(format!("{m} (the suite's base branch)")),
                RefError::Git(m) => EngineError::Upstream(m),
            })?;
            let mb = repo.merge_base(&branch, &head_sha).await.map_err(|e| EngineError::field("head", e))?;
            (format!("merge-base({}, {})", suite.base_branch, req.head), mb)
        }
    };
    let mut arms = if req.calibration || req.baseline {
        vec![PlannedArm {
            name: if req.baseline { store::schedules::BASELINE_ARM.into() } else { "calibration".into() },
            role: "control".into(),
            git_ref: req.head.clone(),
            sha: head_sha.clone(),
            config: None,
        }]
    } else {
        vec![
            PlannedArm { name: "control".into(), role: "control".into(), git_ref: base_ref, sha: base_sha, config: None },
            PlannedArm { name: "treatment".into(), role: "treatment".into(), git_ref: req.head.clone(), sha: head_sha, config: None },
        ]
    };
    for (i, extra) in req.arms.iter().enumerate() {
        let sha = repo.resolve(&extra.git_ref).await.map_err(|e| e.at(&format!("arms[{i}].ref")))?;
        let mut config = extra.config.clone();
        if let Some(JsonConfigDiff::Commit(c)) = &config {
            config = Some(JsonConfigDiff::Commit(repo.resolve(c).await.map_err(|e| e.at(&format!("arms[{i}].config.commit")))?));
        }
        arms.push(PlannedArm { name: extra.name.clone(), role: "treatment".into(), git_ref: extra.git_ref.clone(), sha, config });
    }

    let mut runs = Vec::new();
    let mut estimated_minutes = None;
    let mut estimate_basis = None;
    if let Some(warp) = suite.warp.as_ref().filter(|_| suite.kind == judge::ExperimentKind::Warp) {
        if req.calibration {
            return Err(EngineError::field("calibration", "a warp suite has no noise profile; launch an A/A (head and base the same) instead"));
        }
        // The suite's matrix or templates not rendering: the request cannot run as given (as before, a 400).
        runs = warp_runs(ctx, suite, warp, &fingerprint, &arms, trials as usize, order).map_err(EngineError::Invalid)?;
        estimated_minutes = Some((crate::warp::plan::estimated_phase_secs(warp) * runs.len() as f64 / 60.0 * 10.0).round() / 10.0);
        estimate_basis = Some("the matrix settings (warm-up, duration, rounds and cool-down of every load run)".to_string());
    }
    // A reused control has no trials: the plan covers the arms after it. Warm-ups run first (seq 0…),
    // then the pairs.
    let skip = usize::from(reused.is_some());
    let pipeline = suite.kind != judge::ExperimentKind::Warp;
    let warm_ups = if pipeline { warm_ups(arms.len() - skip, warm_up as usize, order_seed) } else { Vec::new() };
    let first = warm_ups.len();
    let planned = plan(arms.len() - skip, trials as usize, order, order_seed).into_iter().filter(|_| pipeline);
    let all = warm_ups
        .into_iter()
        .enumerate()
        .map(|(seq, arm)| (seq, arm, 0, true))
        .chain(planned.map(|t| (first + t.seq, t.arm, t.repeat, false)));
    for (seq, arm, repeat, warm_up) in all {
        let arm = &arms[arm + skip];
        let run_tag = format!("arb-{}-{}", ctx.label, seq);
        let worktree = worktree_dir(ctx.data_dir, &ctx.label, &arm.name);
        let vars =
            run_vars(ctx, &worktree, &run_tag, arm, locality.and_then(|l| l.region.clone()), locality.and_then(|l| l.cluster.clone()));
        let argv = suite.render_argv(&fingerprint, &vars).map_err(EngineError::Invalid)?;
        runs.push(PlannedRun { seq, arm: arm.name.clone(), repeat, run_tag, argv, phase: None, warm_up });
    }
    let title = req.title.clone().unwrap_or_else(|| match (req.calibration, req.baseline) {
        (true, _) => format!("{}: calibration of {}", suite.name, req.head),
        (_, true) => format!("{}: baseline of {}", suite.name, req.head),
        _ if req.canary => format!("{}: canary of {} at {}", suite.name, req.head, short(&arms[0].sha)),
        _ => format!("{}: {} vs {}", suite.name, short(&arms[0].sha), req.head),
    });
    let warp_adaptive =
        suite.warp.as_ref().filter(|_| suite.kind == judge::ExperimentKind::Warp).map(|w| crate::warp::plan::adaptive_words(w, arms.len()));
    Ok(JsonLaunchPlan {
        suite: suite.name.clone(),
        repo_dir: repo.dir.to_string_lossy().into_owned(),
        title,
        fingerprint,
        region: locality.and_then(|l| l.region.clone()),
        cluster: locality.and_then(|l| l.cluster.clone()),
        // An adaptive launch's worst case is its budget: every arm at max_trials.
        max_minutes: adaptive.as_ref().map_or(runs.len() as u64, |a| (a.max_trials as usize * (arms.len() - skip) + first) as u64)
            * u64::from(suite.timeout_minutes),
        estimated_minutes,
        estimate_basis,
        arms,
        order_words: match suite.warp.as_ref().filter(|_| suite.kind == judge::ExperimentKind::Warp).map(|w| warp_phase_order(w, order)) {
            Some(suite::warp::PhaseOrder::Abba) => "ABBA phase".into(),
            Some(suite::warp::PhaseOrder::Ab) => "AB phase".into(),
            None => order.as_str().into(),
        },
        order,
        order_seed,
        warm_up: if pipeline { warm_up } else { 0 },
        shared_cpus: req.shared_cpus,
        canary: req.canary,
        trials_per_arm: trials,
        trials: runs,
        exemption,
        calibration: req.calibration,
        baseline: req.baseline,
        reused_baseline: reused.cloned(),
        warp_matrix: suite.warp.as_ref().filter(|_| suite.kind == judge::ExperimentKind::Warp).map(|w| w.describe_matrix()),
        warp_adaptive,
        warp_settings: req.warp.clone().filter(|m| !m.is_empty()),
        detectable: None,
        focus: match (&req.focus, &adaptive) {
            (None, _) => None,
            (Some(f), Some(_)) if suite.kind == judge::ExperimentKind::Pipeline => {
                rules::check_text("focus", f, 200)?;
                Some(f.trim().to_string())
            }
            (Some(_), _) => {
                return Err(EngineError::field("focus", "only an adaptive pipeline launch (trials = \"auto\") takes a focus stage"))
            }
        },
        focus_bad_end_pct: match (req.focus_bad_end_pct, &req.focus) {
            (None, _) => None,
            (Some(b), Some(_)) if b.is_finite() && b > -100.0 && b != 0.0 && b < 100_000.0 => Some(b),
            (Some(b), Some(_)) => {
                return Err(EngineError::field(
                    "focus_bad_end_pct",
                    format!("{b}: the bad end's change is a percent above −100, not 0 (a bisection's ends that moved)"),
                ))
            }
            (Some(_), None) => {
                return Err(EngineError::field("focus_bad_end_pct", "give it with focus (the stage it is the change of)"))
            }
        },
        adaptive,
    })
}

/// Trials an arm of a launch that cannot be adaptive (a calibration, a baseline run, a reused baseline,
/// blocked order) when its suite's default is `"auto"` and the launch names no number.
pub const FIXED_WHEN_NOT_ADAPTIVE: u32 = 5;

/// `trials = "auto"`: the budget and the unit pairs are added in, or why this launch cannot be adaptive.
fn adaptive_plan(
    req: &JsonLaunch,
    suite: &SuiteDefinition,
    choice: JsonTrials,
    order: TrialOrder,
) -> Result<Option<AdaptivePlan>, EngineError> {
    if !choice.is_auto() {
        if req.max_trials.is_some() {
            return Err(EngineError::field("max_trials", "only with trials = \"auto\" (a fixed number of trials is its own budget)"));
        }
        return Ok(None);
    }
    if req.calibration || req.baseline {
        return Err(EngineError::field("trials", "\"auto\" adds pairs until an A/B is decided; a calibration or baseline run takes a number of trials"));
    }
    if req.reuse_baseline.is_some() {
        return Err(EngineError::field(
            "trials",
            "\"auto\" judges pairs that ran side by side; a reused baseline's trials have no partners — give a number",
        ));
    }
    // Pairs are added one at a time, each in the order `plan::repeat_order` gives its repeat (balanced
    // blocks and ABBA's alternation continue across the additions).
    let step = match order {
        TrialOrder::Interleaved | TrialOrder::Abba | TrialOrder::ControlFirst => 1,
        TrialOrder::Blocked => {
            return Err(EngineError::field(
                "order",
                "\"blocked\" runs every control before any treatment, so it has no pairs to add; use interleaved or abba with trials = \"auto\"",
            ))
        }
    };
    let max_trials = req.max_trials.unwrap_or(suite.defaults.max_trials);
    rules::check_max_trials(max_trials)?;
    Ok(Some(AdaptivePlan {
        max_trials: max_trials - max_trials % step,
        max_minutes: suite.defaults.max_minutes,
        step,
        expected_trials: None,
        beyond_budget: false,
        budget_minutes: None,
    }))
}


/// A warp experiment's phases: the server's start argv (keys and port shown as placeholders) and the
/// load runs of each, in the order the runner executes them.
/// A warp launch runs ABBA when it asks for ABBA, else the suite's phase order.
fn warp_phase_order(warp: &suite::warp::WarpSpec, order: TrialOrder) -> suite::warp::PhaseOrder {
    if order == TrialOrder::Abba {
        suite::warp::PhaseOrder::Abba
    } else {
        warp.order
    }
}

fn warp_runs(
    ctx: &RunContext<'_>,
    suite: &SuiteDefinition,
    warp: &suite::warp::WarpSpec,
    fingerprint: &Fingerprint,
    arms: &[PlannedArm],
    repeats: usize,
    order: TrialOrder,
) -> Result<Vec<PlannedRun>, String> {
    use crate::warp::plan::{bucket, driver_argv, phases, PlannedPhase};
    let phase_order = warp_phase_order(warp, order);
    let workloads = warp.workload_specs()?;
    let exe = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| "arbiter".into());
    let mut runs = Vec::new();
    for (seq, slot) in phases(arms.len(), repeats, phase_order, &warp.sync_values()).into_iter().enumerate() {
        let arm = &arms[slot.arm];
        let endpoint = warp.endpoint.clone().unwrap_or_else(|| "http://127.0.0.1:<port>".into());
        let argv = match &warp.endpoint {
            Some(_) => suite.render(&warp.deploy_hook, fingerprint, &BTreeMap::new())?,
            None => {
                let binary = crate::warp::plan::planned_binary(ctx.data_dir, suite, arm).map(|p| p.to_string_lossy().into_owned());
                let vars: BTreeMap<&str, String> = [
                    ("binary", binary.unwrap_or_else(|| "<binary>".into())),
                    ("port", "<port>".into()),
                    ("data_dirs", format!("<{} fresh data dir(s)>", warp.disks)),
                    ("access_key", "<redacted>".into()),
                    ("secret_key", "<redacted>".into()),
                ]
                .into_iter()
                .collect();
                suite.render(&warp.server, fingerprint, &vars)?
            }
        };
        let loads = workloads
            .iter()
            .flat_map(|w| std::iter::repeat_n(driver_argv(&exe, &endpoint, w, warp, &bucket(&ctx.label, seq, w)), warp.rounds as usize))
            .collect();
        runs.push(PlannedRun {
            seq,
            arm: arm.name.clone(),
            repeat: slot.repeat,
            run_tag: format!("arb-{}-{seq}", ctx.label),
            argv,
            phase: Some(PlannedPhase { drive_sync: slot.drive_sync, leg: slot.leg.clone(), loads }),
            warm_up: false,
        });
    }
    Ok(runs)
}


/// `data-dir/worktrees/{experiment}-{arm}`: one worktree per arm, reused by its trials.
pub fn worktree_dir(data_dir: &Path, label: &str, arm: &str) -> std::path::PathBuf {
    data_dir.join("worktrees").join(format!("{label}-{arm}"))
}

/// The values of the run placeholders of one trial.
pub fn run_vars(
    ctx: &RunContext<'_>,
    worktree: &Path,
    run_tag: &str,
    arm: &PlannedArm,
    region: Option<String>,
    cluster: Option<String>,
) -> BTreeMap<&'static str, String> {
    let mut vars: BTreeMap<&str, String> = BTreeMap::new();
    vars.insert("worktree", worktree.to_string_lossy().into_owned());
    vars.insert("data_dir", ctx.data_dir.to_string_lossy().into_owned());
    vars.insert("run_tag", run_tag.to_string());
    vars.insert("arm", arm.name.clone());
    vars.insert("sha", arm.sha.clone());
    vars.insert("finelog_url", ctx.finelog_url.clone());
    vars.extend(ctx.python.clone().map(|p| ("python", p)));
    vars.extend(region.map(|r| ("region", r)));
    vars.extend(cluster.map(|c| ("cluster", c)));
    vars
}

fn check_config(arm: &str, config: Option<&JsonConfigDiff>, suite: &SuiteDefinition) -> Result<(), FieldError> {
    let field = format!("arm {arm:?}");
    if matches!(config, Some(JsonConfigDiff::Commit(_) | JsonConfigDiff::Patch(_))) && !suite.allow_patches {
        let problem =
            format!("a config patch or commit is code beyond the arm's ref; suite {:?} takes one only with allow_patches = true", suite.name);
        return Err(FieldError::new(field, problem));
    }
    match config {
        None => Ok(()),
        Some(JsonConfigDiff::Commit(c)) if is_safe_ref(c) => Ok(()),
        Some(JsonConfigDiff::Commit(c)) => Err(FieldError::new(field, format!("config commit {c:?} is not a plain git ref"))),
        Some(JsonConfigDiff::Patch(p)) if !p.trim().is_empty() && p.len() <= 256 * 1024 && !p.contains('\0') => Ok(()),
        Some(JsonConfigDiff::Patch(_)) => Err(FieldError::new(field, "a config patch is a non-empty unified diff of at most 256 KiB")),
        Some(JsonConfigDiff::Overrides(map)) => {
            for (k, v) in map {
                if suite.fingerprint.contains_key(k) {
                    return Err(FieldError::new(field, format!("{k:?} is part of the fingerprint, which every arm shares; it cannot be overridden")));
                }
                rules::check_override(arm, k, &suite.overrides)?;
                if !is_safe_value(v) {
                    return Err(FieldError::new(field, format!("override {k}={v:?} holds characters a setting value may not")));
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{check_config, JsonConfigDiff};

    #[test]
    fn patch_and_commit_arms_need_the_suites_allow_patches() {
        let text = "name = \"s\"\nkind = \"pipeline\"\nrepository = \"r\"\ncommand = [\"echo\", \"{run_tag}\"]\n[resources]\ncpu = 1\nram = \"1GiB\"\n";
        let mut suite = suite::SuiteDefinition::from_toml(text).unwrap();
        let patch = JsonConfigDiff::Patch("--- a/x\n+++ b/x\n".into());
        let commit = JsonConfigDiff::Commit("main".into());
        for diff in [&patch, &commit] {
            let e = check_config("c", Some(diff), &suite).unwrap_err();
            assert!(e.problem.ends_with("suite \"s\" takes one only with allow_patches = true"), "{e}");
        }
        let overrides = JsonConfigDiff::Overrides([("POOL".to_string(), "9".to_string())].into_iter().collect());
        assert!(check_config("c", Some(&overrides), &suite).unwrap_err().problem.contains("takes no overrides"));
        suite.overrides = vec!["POOL".into()];
        check_config("c", Some(&overrides), &suite).unwrap();
        suite.allow_patches = true;
        check_config("c", Some(&patch), &suite).unwrap();
        check_config("c", Some(&commit), &suite).unwrap();
    }
}
