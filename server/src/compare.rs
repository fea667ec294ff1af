//! `arbiter compare` and `arbiter calibrate`: thin shells over the pure pipeline judge.

use crate::cli::{CalibrateArgs, CompareArgs, ReportFormat};
use judge::pipeline::aggregate::TrialSpec;
use judge::FieldError;
use judge::pipeline::noise::NoiseProfile;
use judge::pipeline::render::{self, ArmIds};
use judge::pipeline::rows::{parse_rows, StageRow};
use judge::pipeline::sequential::{abba_blocks, Unit};
use judge::pipeline::{calibrate, judge, judge_sequential, ArmSpec, MethodConfig, PipelineConfig, SequentialConfig};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Reads and merges every rows file; errors name the file, line and column.
fn read_rows(files: &[PathBuf]) -> Result<Vec<StageRow>, String> {
    let mut rows = Vec::new();
    for f in files {
        let text = crate::read_input(f)?;
        rows.extend(parse_rows(&f.display().to_string(), &text).map_err(|e| e.to_string())?);
    }
    Ok(rows)
}

/// "id1,id2" → a trial; empty parts are refused.
/// One trial's execution ids as given in `field` (`control`, `treatment`: the CLI's flag and the import's key).
pub(crate) fn trial(field: &str, ids: &str) -> Result<TrialSpec, FieldError> {
    let execution_ids: Vec<String> = ids.split(',').map(|s| s.trim().to_string()).collect();
    if execution_ids.iter().any(String::is_empty) {
        return Err(FieldError::new(field, format!("{ids:?}: execution ids are comma-separated and none may be empty")));
    }
    Ok(TrialSpec { execution_ids, pair: None, position: None })
}

fn valid_arm_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// Groups `--treatment [NAME=]IDS` occurrences (the import's `treatment` values) into arms, in first-seen order.
pub(crate) fn treatment_arms(values: &[String]) -> Result<Vec<ArmSpec>, FieldError> {
    let mut arms: Vec<ArmSpec> = Vec::new();
    for v in values {
        let (name, ids) = match v.split_once('=') {
            Some((n, ids)) => (n.trim(), ids),
            None => ("treatment", v.as_str()),
        };
        if !valid_arm_name(name) || name == "control" {
            let problem = format!("{v:?}: arm name {name:?} must be letters, digits, '-', '_' or '.' (and not \"control\")");
            return Err(FieldError::new("treatment", problem));
        }
        let spec = trial("treatment", ids)?;
        match arms.iter_mut().find(|a| a.name == name) {
            Some(arm) => arm.trials.push(spec),
            None => arms.push(ArmSpec { name: name.to_string(), trials: vec![spec] }),
        }
    }
    Ok(arms)
}

use engine::import::Compared;

/// The zephyr.stage rows of every execution id of these trials, from a finelog server.
pub async fn rows_from_finelog(url: &str, control: &[TrialSpec], arms: &[ArmSpec]) -> Result<Vec<StageRow>, String> {
    let finelog = engine::queue::finelog::Finelog::new(url).map_err(|e| e.to_string())?;
    rows_from(&finelog, control, arms).await.map_err(|e| format!("{url}: {e}"))
}

/// The zephyr.stage rows of every execution id of these trials, from a finelog client.
pub async fn rows_from(
    finelog: &engine::queue::finelog::Finelog,
    control: &[TrialSpec],
    arms: &[ArmSpec],
) -> Result<Vec<StageRow>, String> {
    let mut ids: Vec<String> = control.iter().chain(arms.iter().flat_map(|a| &a.trials)).flat_map(|t| t.execution_ids.clone()).collect();
    ids.sort();
    ids.dedup();
    finelog.stage_rows(&ids).await.map_err(|e| e.to_string())
}

/// The rows of every named execution id from `--finelog-url`, when given.
pub async fn fetch_rows(args: &CompareArgs) -> Result<Vec<StageRow>, String> {
    let Some(url) = &args.finelog_url else { return Ok(Vec::new()) };
    let control: Vec<TrialSpec> = args.control.iter().map(|c| trial("control", c)).collect::<Result<_, _>>().map_err(|e| e.for_cli())?;
    let arms = treatment_arms(&args.treatment).map_err(|e| e.for_cli())?;
    rows_from_finelog(url, &control, &arms).await.map_err(|e| format!("--finelog-url {e}"))
}

/// Reads and checks `compare`'s arguments and judges (also behind `arbiter import pipeline`); `fetched`
/// are rows read from finelog ([`fetch_rows`]).
pub fn judge_args(args: &CompareArgs, fetched: Vec<StageRow>) -> Result<Compared, String> {
    let mut rows = read_rows(&args.rows)?;
    rows.extend(fetched);
    let control: Vec<TrialSpec> = args.control.iter().map(|c| trial("control", c)).collect::<Result<_, _>>().map_err(|e| e.for_cli())?;
    let arms = treatment_arms(&args.treatment).map_err(|e| e.for_cli())?;
    if !(args.equivalence_tolerance.is_finite() && args.equivalence_tolerance >= 0.0) {
        return Err(format!("--equivalence-tolerance {}: must be a percentage ≥ 0", args.equivalence_tolerance));
    }
    let worker_ram = args.worker_ram.as_deref().map(judge::units::parse_size).transpose().map_err(|e| format!("--worker-ram: {e}"))?;
    let noise = args.noise.as_deref().map(read_profile).transpose()?;
    use judge::pipeline::method::NoRegression;
    let no_regression = match args.no_regression.as_deref() {
        None => NoRegression::Plan,
        Some("off") => NoRegression::Off,
        Some(x) => NoRegression::At(
            x.trim_end_matches('%').trim().parse::<f64>().map_err(|_| format!("--no-regression {x}: a percent (such as 5) or \"off\""))?,
        ),
    };
    let method = MethodConfig {
        alpha: args.alpha,
        cpu_margin_pct: args.cpu_margin,
        elapsed_margin_pct: args.elapsed_margin,
        paired: args.paired,
        no_regression,
        max_no_regression_pct: args.max_no_regression,
    };
    method.check().map_err(|(which, what)| format!("--{} {what}", which.replace('_', "-")))?;
    if args.max_pairs == Some(0) {
        return Err("--max-pairs 0: the budget is at least one pair".into());
    }
    let (mut control, mut arms) =
        if args.paired || args.sequential { pair_by_position(control, arms, args.sequential)? } else { (control, arms) };
    if let Some(order) = &args.order {
        if !(args.paired || args.sequential) {
            return Err(format!("--order {order}: orders are of pairs; add --paired (or --sequential)"));
        }
        if args.abba {
            return Err("--order with --abba: an ABBA block runs each arm first once, so it has no order to give".into());
        }
        apply_order(order, &mut control, &mut arms, &rows)?;
    }
    let config = PipelineConfig {
        worker_ram,
        equivalence_tolerance_pct: args.equivalence_tolerance,
        accept_workload_mismatch: args.accept_workload_mismatch,
        noise,
        method,
        focus: None,
        focus_bad_end_pct: None,
        no_regression_pct: None,
    };
    let report = if args.sequential {
        let unit = if args.abba { Unit::AbbaBlock } else { Unit::Pair };
        let seq = SequentialConfig { unit, max_pairs: args.max_pairs };
        if args.abba {
            if control.len() % 2 == 1 {
                return Err(format!(
                    "--abba: an odd number of pairs ({}) does not make whole blocks (C T T C is two pairs)",
                    control.len()
                ));
            }
            let (c, a) = abba_blocks(&control, &arms);
            judge_sequential(&rows, &c, &a, &config, &seq)
        } else {
            judge_sequential(&rows, &control, &arms, &config, &seq)
        }
    } else {
        judge(&rows, &control, &arms, &config)
    }
    .map_err(|e| e.to_string())?;
    Ok(Compared { rows, control, arms, report })
}

/// A noise profile file (either method's format).
fn read_profile(path: &std::path::Path) -> Result<NoiseProfile, String> {
    let text = crate::read_input(path)?;
    serde_json::from_str::<NoiseProfile>(&text).map_err(|e| format!("{}: not a noise profile: {e}", path.display()))
}

/// `--paired` (and `--sequential`): the i-th control trial and the i-th trial of every arm share pair key
/// i; each arm must have as many trials as the control.
fn pair_by_position(
    mut control: Vec<TrialSpec>,
    mut arms: Vec<ArmSpec>,
    sequential: bool,
) -> Result<(Vec<TrialSpec>, Vec<ArmSpec>), String> {
    let flag = if sequential { "--sequential" } else { "--paired" };
    for arm in &arms {
        if arm.trials.len() != control.len() {
            return Err(format!(
                "{flag}: arm {:?} has {} trial(s) and the control {}; pairs need one treatment trial per control trial, in order",
                arm.name,
                arm.trials.len(),
                control.len()
            ));
        }
    }
    for (i, t) in control.iter_mut().enumerate() {
        t.pair = Some(i as u32);
    }
    for arm in &mut arms {
        for (i, t) in arm.trials.iter_mut().enumerate() {
            t.pair = Some(i as u32);
        }
    }
    Ok((control, arms))
}

/// `--order`: each trial's position in its pair, from one word a pair (`ct`/`tc`, two arms) or from the
/// rows' timestamps (each trial's earliest `ts`; any number of arms).
fn apply_order(order: &str, control: &mut [TrialSpec], arms: &mut [ArmSpec], rows: &[StageRow]) -> Result<(), String> {
    let pairs = control.len();
    if order.trim() == "timestamps" {
        let mut earliest: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        for r in rows {
            let (Some(ts), key) = (r.ts.as_deref(), judge::pipeline::rows::execution_key(&r.execution_id).unwrap_or(&r.execution_id))
            else {
                continue;
            };
            let e = earliest.entry(key).or_insert(ts);
            if ts < *e {
                *e = ts;
            }
        }
        let start = |t: &TrialSpec| -> Result<String, String> {
            t.execution_ids
                .iter()
                .filter_map(|id| earliest.get(judge::pipeline::rows::execution_key(id).unwrap_or(id)).copied())
                .min()
                .map(str::to_string)
                .ok_or_else(|| format!("--order timestamps: trial {} has no row with a ts", t.execution_ids.join(",")))
        };
        for (i, c) in control.iter_mut().enumerate().take(pairs) {
            let mut starts = vec![start(c)?];
            for arm in arms.iter() {
                starts.push(start(&arm.trials[i])?);
            }
            let rank = |s: &String| starts.iter().filter(|o| *o < s).count() as u32;
            if (0..starts.len()).any(|a| starts.iter().skip(a + 1).any(|b| *b == starts[a])) {
                return Err(format!(
                    "--order timestamps: pair {} has two trials starting at {}; give the order as ct/tc words",
                    i + 1,
                    starts[0]
                ));
            }
            c.position = Some(rank(&starts[0]));
            for (a, arm) in arms.iter_mut().enumerate() {
                arm.trials[i].position = Some(rank(&starts[a + 1]));
            }
        }
        return Ok(());
    }
    if arms.len() != 1 {
        return Err(format!("--order {order}: ct/tc words name two arms; with {} treatment arms use --order timestamps", arms.len()));
    }
    let words: Vec<&str> = order.split(',').map(str::trim).collect();
    if words.len() != pairs {
        return Err(format!("--order: {} word(s) for {pairs} pair(s); give one (ct or tc) per pair", words.len()));
    }
    for (i, w) in words.iter().enumerate() {
        let treatment_first = match w.to_ascii_lowercase().as_str() {
            "ct" => false,
            "tc" => true,
            _ => return Err(format!("--order: pair {}: {w:?} is not ct (control first) or tc (treatment first)", i + 1)),
        };
        control[i].position = Some(u32::from(treatment_first));
        arms[0].trials[i].position = Some(u32::from(!treatment_first));
    }
    Ok(())
}

/// Runs `compare`; returns the exit code of its verdict.
pub fn run_compare(args: CompareArgs) -> Result<i32, String> {
    let fetched = match args.finelog_url {
        None => Vec::new(),
        Some(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?
            .block_on(fetch_rows(&args))?,
    };
    let Compared { control, arms, report, .. } = judge_args(&args, fetched)?;
    let format = args.format.unwrap_or(if std::io::stdout().is_terminal() { ReportFormat::Table } else { ReportFormat::Json });
    let text = match format {
        ReportFormat::Json => serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?,
        ReportFormat::Table => render::table(&report),
        ReportFormat::Markdown => {
            let mut ids = vec![ArmIds { name: "control".into(), trials: control.iter().map(|t| t.execution_ids.clone()).collect() }];
            ids.extend(
                arms.iter().map(|a| ArmIds { name: a.name.clone(), trials: a.trials.iter().map(|t| t.execution_ids.clone()).collect() }),
            );
            render::markdown(&report, &ids)
        }
    };
    println!("{}", text.trim_end());
    Ok(report.verdict.exit_code().code())
}

pub fn run_calibrate(args: CalibrateArgs) -> Result<i32, String> {
    if args.trial.len() < 2 {
        return Err("calibrate needs at least two --trial occurrences (same-code repeats)".into());
    }
    let rows = read_rows(&args.rows)?;
    let trials: Vec<TrialSpec> = args.trial.iter().map(|t| trial("trial", t)).collect::<Result<_, _>>().map_err(|e| e.for_cli())?;
    let fingerprint =
        args.fingerprint.as_deref().map(serde_json::from_str).transpose().map_err(|e| format!("--fingerprint: not JSON: {e}"))?;
    let mut profile = calibrate(&rows, &trials, fingerprint).map_err(|e| e.to_string())?;
    if let Some(path) = &args.grow {
        profile = read_profile(path)?.grow(&profile).map_err(|e| format!("--grow {}: {e}", path.display()))?;
    }
    let text = serde_json::to_string_pretty(&profile).map_err(|e| e.to_string())?;
    match &args.output {
        Some(path) => std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => println!("{text}"),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn treatments_group_by_name() {
        let arms = treatment_arms(&["a,b".into(), "fast=c".into(), "d".into(), "fast=e".into()]).unwrap();
        assert_eq!(arms.len(), 2);
        assert_eq!((arms[0].name.as_str(), arms[0].trials.len()), ("treatment", 2));
        assert_eq!(arms[0].trials[0].execution_ids, ["a", "b"]);
        assert_eq!((arms[1].name.as_str(), arms[1].trials.len()), ("fast", 2));
        assert!(treatment_arms(&["bad name=x".into()]).unwrap_err().for_cli().starts_with("--treatment: \"bad name=x\": arm name"));
        assert!(treatment_arms(&["control=x".into()]).is_err());
        assert!(treatment_arms(&["x,,y".into()]).unwrap_err().problem.contains("none may be empty"));
    }
}
