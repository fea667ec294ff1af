//! A phase in external mode: the deploy hook (with HOTPATH_AB_PHASE, HOTPATH_AB_BINARY and
//! HOTPATH_AB_DRIVE_SYNC), then health, then the rounds against the suite's endpoint. Arbiter never
//! starts or restarts that server.

use crate::launch::request::PlannedArm;
use crate::launch::submit::StoredPlan;
use crate::queue::runner::{clean_env, Outcome};
use crate::warp::phase::{binary_for, Phase, PhaseRecord};
use crate::warp::rounds::{healthy, rounds};
use judge::InfraReason;
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) async fn external(
    p: &mut Phase<'_>,
    plan: &StoredPlan,
    arm: &PlannedArm,
    drive_sync: bool,
    record: &mut PhaseRecord,
) -> Outcome {
    let spec = p.spec;
    let endpoint = spec.endpoint.clone().unwrap_or_default().trim_end_matches('/').to_string();
    record.endpoint = endpoint.clone();
    let keys = match loadgen::command::read_credentials_file(Path::new(spec.credentials_file.as_deref().unwrap_or_default())) {
        Ok(k) => k,
        Err(e) => return Outcome::launcher_error(e),
    };
    let binary = match binary_for(p, plan, arm, record).await {
        Ok(b) => b,
        Err(o) => return o,
    };
    if !spec.deploy_hook.is_empty() {
        let argv = match plan.suite.render(&spec.deploy_hook, &plan.launch.fingerprint, &Default::default()) {
            Ok(a) => a,
            Err(e) => return Outcome::launcher_error(e),
        };
        let phase = if arm.role == "control" { "baseline" } else { "candidate" };
        let sync_value = if drive_sync { &spec.drive_sync.on } else { &spec.drive_sync.off };
        p.say(&format!("deploy hook for the {phase} phase (drive sync {sync_value}): {argv:?}"));
        let mut cmd = tokio::process::Command::new(&argv[0]);
        clean_env(cmd.args(&argv[1..]).stdin(std::process::Stdio::null()).kill_on_drop(true));
        cmd.env("HOTPATH_AB_PHASE", phase)
            .env("HOTPATH_AB_BINARY", binary.as_ref().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default())
            .env("HOTPATH_AB_DRIVE_SYNC", sync_value)
            .env("ARBITER_EXPERIMENT", p.trial.experiment_id.to_string())
            .env("ARBITER_ARM", &arm.name)
            .env("ARBITER_SHA", &arm.sha);
        if let Ok(out) = p.log.try_clone() {
            cmd.stdout(out);
        }
        if let Ok(err) = p.log.try_clone() {
            cmd.stderr(err);
        }
        let limit = Duration::from_secs(u64::from(plan.suite.timeout_minutes) * 60);
        match cmd.spawn() {
            Err(e) => return Outcome::launcher_error(format!("cannot run the deploy hook {:?}: {e}", argv[0])),
            Ok(mut child) => match tokio::time::timeout(limit, child.wait()).await {
                Ok(Ok(s)) if s.success() => {}
                Ok(Ok(s)) => return Outcome::launcher_error(format!("the deploy hook failed ({s}); see the phase log")),
                Ok(Err(e)) => return Outcome::launcher_error(e.to_string()),
                Err(_) => return Outcome::infra(InfraReason::Timeout, "the deploy hook did not finish within the suite's timeout"),
            },
        }
    }
    let http = match reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build() {
        Ok(h) => h,
        Err(e) => return Outcome::launcher_error(e.to_string()),
    };
    let health_url = format!("{endpoint}{}", spec.health_path);
    let started = Instant::now();
    while !healthy(&http, &health_url, None).await {
        if started.elapsed() > Duration::from_secs(spec.health_timeout_secs) {
            return Outcome::infra(
                InfraReason::LauncherError,
                format!("health timeout: {health_url} did not answer within {} s after the deploy hook", spec.health_timeout_secs),
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    rounds(p, &endpoint, drive_sync, (&keys.0, &keys.1), None, None).await
}
