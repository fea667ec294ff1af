//! The launch form's values, the rules they are checked with as the user types (the server's own, from
//! `judge::launch_rules`), and the JSON request they make.

use super::SuiteChoice;
use judge::launch_rules as rules;
use judge::FieldError;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// An extra arm as typed: name, ref and optional `KEY=value` override lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtraArm {
    pub name: String,
    pub git_ref: String,
    pub overrides: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FormValues {
    pub head: String,
    pub base: String,
    pub title: String,
    pub trials: String,
    /// With trials "auto": the most trials an arm (empty: the suite's budget).
    pub max_trials: String,
    pub order: String,
    pub fingerprint: BTreeMap<String, String>,
    pub arms: Vec<ExtraArm>,
    pub exempt: bool,
    pub reason: String,
    /// Reuse the latest matching baseline run as the control (pipeline suites).
    pub reuse_baseline: bool,
    pub fail_pct: String,
    pub warn_pct: String,
    /// Pipeline suites: the CPU change (%) the preview sizes the trials for; empty: the suite's margin.
    pub detect_pct: String,
    /// Warp suites: the matrix. `preset` is "full" or "smoke"; the workloads and drive-sync values ticked
    /// (all of the suite's by default); the settings typed (empty: the preset's or the suite's).
    pub preset: String,
    pub workloads: Vec<String>,
    pub drive_sync: Vec<String>,
    pub rounds: String,
    pub duration: String,
    pub warmup: String,
    pub cooldown: String,
    pub concurrency: String,
}

impl FormValues {
    /// Trials "auto": the engine adds pairs while the verdict is undecided.
    pub fn is_auto(&self) -> bool {
        self.trials.parse::<rules::JsonTrials>().is_ok_and(rules::JsonTrials::is_auto)
    }

    /// A fresh form for a suite: its defaults filled in.
    pub fn for_suite(suite: &SuiteChoice) -> FormValues {
        let fingerprint = suite
            .fingerprint
            .iter()
            .map(|(k, spec)| {
                let v = match spec.default_value() {
                    Some(Value::String(s)) => s,
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                (k.clone(), v)
            })
            .collect();
        let (fail, warn) = suite.budgets.map(|(f, w)| (f.to_string(), w.to_string())).unwrap_or_default();
        let warp = suite.warp.as_ref();
        FormValues {
            trials: suite.trials.to_string(),
            // A warp launch runs its phases AB or ABBA (the suite's order unless ABBA is chosen).
            order: match warp {
                Some(w) if w.abba => "abba".into(),
                Some(_) => "interleaved".into(),
                None => suite.order.clone(),
            },
            fingerprint,
            fail_pct: fail,
            warn_pct: warn,
            preset: "full".into(),
            workloads: warp.map(|w| w.workloads.clone()).unwrap_or_default(),
            drive_sync: warp.map(|w| w.drive_sync.clone()).unwrap_or_default(),
            ..Default::default()
        }
    }
}

fn overrides(arm: &ExtraArm) -> Result<Option<BTreeMap<String, String>>, FieldError> {
    let mut map = BTreeMap::new();
    for line in arm.overrides.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (k, v) =
            line.split_once('=').ok_or_else(|| FieldError::new(format!("arm {:?}", arm.name), format!("override {line:?} is not KEY=value")))?;
        map.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok((!map.is_empty()).then_some(map))
}

/// Every problem with the values, by form field (`head`, `fingerprint.workers`, `arms.0.name`, …), in the
/// words the server would use (`FieldError`'s `field: problem`, the API's own). Empty when the server's
/// static checks would pass.
pub fn problems(suite: &SuiteChoice, f: &FormValues) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut put = |field: String, r: Result<(), FieldError>| {
        if let Err(e) = r {
            out.entry(field).or_insert(e.to_string());
        }
    };
    put("head".into(), rules::check_ref("head", f.head.trim()));
    if !f.base.trim().is_empty() {
        put("base".into(), rules::check_ref("base", f.base.trim()));
        if f.reuse_baseline {
            put("base".into(), Err(FieldError::new("base", "leave the control ref empty to reuse a baseline run as the control")));
        }
    }
    if !f.title.trim().is_empty() {
        put("title".into(), rules::check_text("title", &f.title, rules::TITLE_MAX));
    }
    put("trials".into(), rules::check_trials_text(suite.kind, &f.trials).map(|_| ()));
    if f.is_auto() && !f.max_trials.trim().is_empty() {
        let max = f.max_trials.trim().parse::<u32>();
        let max = max.map_err(|_| FieldError::new("max_trials", format!("{:?} is not a whole number", f.max_trials.trim())));
        put("max_trials".into(), max.and_then(rules::check_max_trials));
    }
    if !f.detect_pct.trim().is_empty() {
        let ok = f.detect_pct.trim().parse::<f64>().is_ok_and(|p| p > 0.0 && p < 100.0);
        put(
            "detect_pct".into(),
            if ok { Ok(()) } else { Err(FieldError::new("detect_pct", format!("{:?}: a CPU change in percent, above 0 and below 100", f.detect_pct))) },
        );
    }
    for (name, spec) in &suite.fingerprint {
        let given = f.fingerprint.get(name).filter(|t| !t.trim().is_empty()).map(|t| spec.value_of_text(t));
        put(format!("fingerprint.{name}"), rules::fingerprint_value(name, spec, given.as_ref()).map(|_| ()));
    }
    for (i, arm) in f.arms.iter().enumerate() {
        put(format!("arms.{i}.name"), rules::check_arm_name(&format!("arms[{i}].name"), arm.name.trim(), f.arms[..i].iter().map(|a| a.name.trim())));
        put(format!("arms.{i}.ref"), rules::check_ref(&format!("arm {:?} ref", arm.name.trim()), arm.git_ref.trim()));
        put(format!("arms.{i}.overrides"), overrides(arm).map(|_| ()));
    }
    if f.exempt {
        put("reason".into(), rules::check_text("exemption.reason", &f.reason, rules::REASON_MAX));
    }
    if suite.warp.is_some() {
        if f.workloads.is_empty() {
            put("warp.workloads".into(), Err(FieldError::new("warp.workloads", "tick at least one workload")));
        }
        if f.drive_sync.is_empty() {
            put("warp.drive_sync".into(), Err(FieldError::new("warp.drive_sync", "tick at least one drive-sync value")));
        }
        for (field, text) in [("rounds", &f.rounds), ("concurrency", &f.concurrency)] {
            if !text.trim().is_empty() && text.trim().parse::<u32>().is_err() {
                put(format!("warp.{field}"), Err(FieldError::new(format!("warp.{field}"), format!("{text:?} is not a whole number"))));
            }
        }
        for (field, text) in [("duration", &f.duration), ("warmup", &f.warmup), ("cooldown", &f.cooldown)] {
            if !text.trim().is_empty() {
                put(
                    format!("warp.{field}"),
                    judge::units::parse_duration(text.trim()).map(|_| ()).map_err(|e| FieldError::new(format!("warp.{field}"), e)),
                );
            }
        }
    }
    if suite.budgets.is_some() {
        let pct = |s: &str| s.trim().parse::<f64>().map_err(|_| FieldError::new("budgets", format!("{s:?} is not a number")));
        put("budgets".into(), pct(&f.fail_pct).and_then(|fail| pct(&f.warn_pct).and_then(|warn| rules::check_budgets(fail, warn))));
    }
    out
}

/// The request body (`POST /api/v1/experiments`), as the API's own type: fields left empty are left out
/// and take the suite's defaults there.
pub fn launch_body(suite: &SuiteChoice, f: &FormValues, dry_run: bool, calibration: bool) -> Value {
    use wire::launch::{JsonBudgets, JsonConfigDiff, JsonExemption, JsonExtraArm, JsonLaunch, LatestWord, ReuseBaseline};
    let fingerprint: Map<String, Value> = suite
        .fingerprint
        .iter()
        .filter_map(|(name, spec)| f.fingerprint.get(name).filter(|t| !t.trim().is_empty()).map(|t| (name.clone(), spec.value_of_text(t))))
        .collect();
    let given = |t: &str| Some(t.trim().to_string()).filter(|t| !t.is_empty());
    let mut body = JsonLaunch {
        suite: suite.name.clone(),
        head: f.head.trim().to_string(),
        fingerprint,
        trials: f.trials.parse::<rules::JsonTrials>().ok(),
        max_trials: f.max_trials.trim().parse::<u32>().ok().filter(|_| f.is_auto()),
        detect_pct: f.detect_pct.trim().parse::<f64>().ok().filter(|_| dry_run && suite.kind == judge::ExperimentKind::Pipeline),
        dry_run,
        ..JsonLaunch::default()
    };
    if calibration {
        body.calibration = true;
    } else {
        body.order = serde_json::from_value(json!(f.order)).ok();
        if f.reuse_baseline && suite.kind == judge::ExperimentKind::Pipeline {
            body.reuse_baseline = Some(ReuseBaseline::Latest(LatestWord::Latest));
        } else {
            body.base = given(&f.base);
        }
        body.title = given(&f.title);
        body.arms = f
            .arms
            .iter()
            .map(|a| JsonExtraArm {
                name: a.name.trim().to_string(),
                git_ref: a.git_ref.trim().to_string(),
                config: overrides(a).ok().flatten().map(JsonConfigDiff::Overrides),
            })
            .collect();
        body.exemption = f.exempt.then(|| JsonExemption { reason: f.reason.trim().to_string() });
        if let Some(w) = &suite.warp {
            // Only what differs from the suite: a subset of its workloads or drive-sync values, a preset,
            // the settings typed. The server checks them against the suite's limits.
            let matrix = wire::launch::JsonWarpMatrix {
                preset: (f.preset == "smoke").then_some(wire::launch::WarpPreset::Smoke),
                workloads: Some(w.workloads.iter().filter(|x| f.workloads.contains(x)).cloned().collect::<Vec<_>>())
                    .filter(|chosen| chosen.len() != w.workloads.len()),
                drive_sync: Some(w.drive_sync.iter().filter(|x| f.drive_sync.contains(x)).cloned().collect::<Vec<_>>())
                    .filter(|chosen| chosen.len() != w.drive_sync.len()),
                rounds: f.rounds.trim().parse().ok(),
                duration: given(&f.duration),
                warmup: given(&f.warmup),
                cooldown: given(&f.cooldown),
                concurrency: f.concurrency.trim().parse().ok(),
                ..wire::launch::JsonWarpMatrix::default()
            };
            body.warp = Some(matrix).filter(|m| !m.is_empty());
        }
        if let (Some((fail, warn)), Ok(fail_pct), Ok(warn_pct)) =
            (suite.budgets, f.fail_pct.trim().parse::<f64>(), f.warn_pct.trim().parse::<f64>())
        {
            body.budgets = ((fail_pct, warn_pct) != (fail, warn)).then_some(JsonBudgets { fail_pct, warn_pct });
        }
    }
    serde_json::to_value(body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> SuiteChoice {
        let fingerprint = serde_json::from_value(json!({"workers": {"type": "integer", "min": 1, "max": 4, "default": 2},
            "sample": {"type": "string", "allowed": ["a", "b"]}}))
        .unwrap();
        SuiteChoice {
            name: "s".into(),
            kind: judge::ExperimentKind::Pipeline,
            description: "x".into(),
            base_branch: "main".into(),
            trials: rules::JsonTrials::Fixed(3),
            max_trials: 20,
            order: "abba".into(),
            fingerprint,
            budgets: None,
            warp: None,
            branches: vec![],
        }
    }

    #[test]
    fn a_warp_form_sends_only_the_matrix_that_differs_from_the_suite() {
        let w = super::super::WarpChoice {
            workloads: vec!["put-4KiB".into(), "get-4KiB".into(), "get-4MiB".into()],
            drive_sync: vec!["on".into(), "off".into()],
            rounds: 3,
            duration: "10s".into(),
            warmup: "2s".into(),
            cooldown: "2s".into(),
            concurrency: 8,
            limits: String::new(),
            abba: true,
            smoke: None,
        };
        let s = SuiteChoice {
            kind: judge::ExperimentKind::Warp,
            fingerprint: BTreeMap::new(),
            budgets: Some((10.0, 5.0)),
            warp: Some(w),
            ..suite()
        };
        let mut f = FormValues::for_suite(&s);
        f.head = "feature".into();
        assert_eq!((f.order.as_str(), f.workloads.len(), f.preset.as_str()), ("abba", 3, "full"));
        assert!(launch_body(&s, &f, true, false)["warp"].is_null(), "the suite's own matrix: nothing to send");
        f.preset = "smoke".into();
        f.workloads.retain(|w| w != "get-4KiB");
        f.drive_sync = vec!["on".into()];
        f.rounds = "1".into();
        f.duration = "3s".into();
        assert!(problems(&s, &f).is_empty(), "{:?}", problems(&s, &f));
        assert_eq!(
            launch_body(&s, &f, true, false)["warp"],
            json!({"preset": "smoke", "workloads": ["put-4KiB", "get-4MiB"], "drive_sync": ["on"], "rounds": 1, "duration": "3s"})
        );
        f.workloads.clear();
        f.warmup = "soon".into();
        let p = problems(&s, &f);
        assert!(p["warp.workloads"].contains("at least one") && p["warp.warmup"].starts_with("warp.warmup: "), "{p:?}");
    }

    #[test]
    fn defaults_problems_and_body() {
        let s = suite();
        let mut f = FormValues::for_suite(&s);
        assert_eq!((f.trials.as_str(), f.order.as_str(), f.fingerprint["workers"].as_str()), ("3", "abba", "2"));
        let p = problems(&s, &f);
        assert!(p["head"].starts_with("head: ") && p["fingerprint.sample"].contains("has no default"), "{p:?}");
        f.head = "feature".into();
        f.fingerprint.insert("sample".into(), "b".into());
        f.fingerprint.insert("workers".into(), "9".into());
        assert_eq!(problems(&s, &f)["fingerprint.workers"], "fingerprint.workers: 9: must be between 1 and 4");
        f.fingerprint.insert("workers".into(), "3".into());
        f.arms.push(ExtraArm { name: "low-mem".into(), git_ref: "main".into(), overrides: "CACHE_MB=64".into() });
        assert!(problems(&s, &f).is_empty(), "{:?}", problems(&s, &f));
        let b = launch_body(&s, &f, true, false);
        assert_eq!(b["fingerprint"], json!({"workers": 3, "sample": "b"}));
        assert_eq!(b["arms"][0]["config"], json!({"overrides": {"CACHE_MB": "64"}}));
        assert!(b["base"].is_null() && b["dry_run"] == true && b["trials"] == 3);
        f.exempt = true;
        assert!(problems(&s, &f)["reason"].starts_with("exemption.reason"));
        assert_eq!(launch_body(&s, &f, false, true)["calibration"], true);
        f.reuse_baseline = true;
        assert_eq!(launch_body(&s, &f, false, false)["reuse_baseline"], "latest");
        f.base = "main".into();
        assert!(problems(&s, &f)["base"].contains("leave the control ref empty"));
    }

    #[test]
    fn an_auto_launch_sends_its_budget_and_a_fixed_one_does_not() {
        let s = suite();
        let mut f = FormValues::for_suite(&s);
        f.head = "feature".into();
        f.fingerprint.insert("sample".into(), "a".into());
        f.max_trials = "12".into();
        assert!(launch_body(&s, &f, true, false)["max_trials"].is_null(), "a fixed launch has no budget to send");
        f.trials = " Auto ".into();
        assert!(f.is_auto() && problems(&s, &f).is_empty(), "{:?}", problems(&s, &f));
        let b = launch_body(&s, &f, true, false);
        assert_eq!((b["trials"].clone(), b["max_trials"].clone()), (json!("auto"), json!(12)));
        for bad in ["1", "500", "many"] {
            f.max_trials = bad.into();
            assert!(problems(&s, &f)["max_trials"].starts_with("max_trials: "), "{bad}: {:?}", problems(&s, &f));
        }
        f.max_trials = String::new();
        assert!(launch_body(&s, &f, true, false)["max_trials"].is_null(), "empty: the suite's budget");
    }
}
