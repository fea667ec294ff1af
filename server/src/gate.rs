//! `arbiter gate`: a thin shell over the pure warp gate, a drop-in for the upstream gate script.

use crate::cli::{GateArgs, GateFormat, WarpCompareArgs, WarpParseArgs};
use judge::warp::compare_csv::parse_compare_csv;
use judge::warp::gate::{gate, GateConfig, GateReport};
use judge::warp::gate_md::{render, Provenance};
use std::path::PathBuf;

/// The files to gate, in order, each with its label: `--compare-csv` files first, then `--label` files
/// not named already.
fn inputs(args: &GateArgs) -> Result<Vec<(PathBuf, Option<String>)>, String> {
    let mut labels = Vec::new();
    for l in &args.label {
        let (name, file) = l.split_once('=').ok_or_else(|| format!("--label {l:?}: expected NAME=FILE"))?;
        if name.trim().is_empty() || name.contains('|') {
            return Err(format!("--label {l:?}: the name must be non-empty and contain no '|'"));
        }
        labels.push((PathBuf::from(file), name.trim().to_string()));
    }
    let label_of = |p: &PathBuf| labels.iter().find(|(f, _)| f == p).map(|(_, n)| n.clone());
    let mut out: Vec<(PathBuf, Option<String>)> = args.compare_csv.iter().map(|p| (p.clone(), label_of(p))).collect();
    for (file, name) in &labels {
        if !out.iter().any(|(p, _)| p == file) {
            out.push((file.clone(), Some(name.clone())));
        }
    }
    if out.is_empty() && args.rounds.is_empty() {
        return Err("name at least one --compare-csv FILE (or --label NAME=FILE, or --rounds NAME=BASELINE,CANDIDATE)".into());
    }
    Ok(out)
}

use engine::warp::verdict::runner;

/// Reads and checks `gate`'s arguments and gates (also behind `arbiter import warp`).
pub fn gate_args(args: &GateArgs) -> Result<(GateReport, Provenance), String> {
    for (flag, v) in [("--fail-pct", args.fail_pct), ("--warn-pct", args.warn_pct)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("{flag} {v}: must be a percentage ≥ 0"));
        }
    }
    for (flag, v) in [("--tail-fail-pct", args.tail_fail_pct), ("--tail-warn-pct", args.tail_warn_pct)] {
        if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
            return Err(format!("{flag}: must be a percentage ≥ 0"));
        }
    }
    if args.warn_pct > args.fail_pct {
        return Err(format!("--warn-pct {} is above --fail-pct {}", args.warn_pct, args.fail_pct));
    }
    let mut rows = Vec::new();
    for (path, label) in inputs(args)? {
        let text = crate::read_input(&path)?;
        rows.extend(parse_compare_csv(&path.display().to_string(), &text, label.as_deref(), args.strict).map_err(|e| e.to_string())?);
    }
    for r in &args.rounds {
        let bad = || format!("--rounds {r:?}: expected NAME=BASELINE_ROUNDS.csv,CANDIDATE_ROUNDS.csv");
        let (name, files) = r.split_once('=').ok_or_else(bad)?;
        let (base, cand) = files.split_once(',').ok_or_else(bad)?;
        if name.trim().is_empty() || name.contains('|') {
            return Err(format!("--rounds {r:?}: the name must be non-empty and contain no '|'"));
        }
        let read = |f: &str| crate::read_input(&PathBuf::from(f.trim()));
        let source = format!("--rounds {name}");
        rows.extend(judge::warp::rounds::compare_rows_from_rounds(&source, name.trim(), &read(base)?, &read(cand)?, args.strict)?);
    }
    let config = GateConfig {
        fail_pct: args.fail_pct,
        warn_pct: args.warn_pct,
        allow_regression: args.allow_regression,
        exemption_reason: args.exemption_reason.clone(),
        allow_missing: args.allow_missing,
        strict: args.strict,
        tail_fail_pct: args.tail_fail_pct,
        tail_warn_pct: args.tail_warn_pct,
    };
    let report = gate(&rows, &config);
    let provenance = Provenance {
        generated: Some(judge::units::utc_rfc3339(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0),
        )),
        runner: Some(runner()),
        load_tool: args.load_tool.clone(),
        matrix: args.matrix.clone(),
        baseline_binary: args.baseline_binary.clone(),
        candidate_binary: args.candidate_binary.clone(),
        baseline_commit: args.baseline_commit.clone(),
        candidate_commit: args.candidate_commit.clone(),
        phase_binaries: Vec::new(),
        notes: args.notes.clone(),
    };
    Ok((report, provenance))
}

pub fn run_gate(args: GateArgs) -> Result<i32, String> {
    let (report, provenance) = gate_args(&args)?;
    let markdown = render(&report, Some(&provenance));
    if let Some(path) = &args.markdown {
        std::fs::write(path, &markdown).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    match args.format {
        GateFormat::Markdown => print!("{markdown}"),
        GateFormat::Json => {
            let json = serde_json::json!({"report": report, "provenance": provenance});
            println!("{}", serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?);
        }
    }
    Ok(report.verdict.exit_code().code())
}

/// `arbiter warp-compare`: median summaries → baseline_compare.csv.
pub fn run_warp_compare(args: WarpCompareArgs) -> Result<i32, String> {
    let read = |p: &PathBuf| -> Result<Vec<judge::warp::rounds::PhaseSummary>, String> {
        let text = crate::read_input(p)?;
        judge::warp::rounds::parse_median_summary(&p.display().to_string(), &text)
    };
    let csv = judge::warp::rounds::write_compare_csv(&read(&args.baseline)?, &read(&args.candidate)?);
    match &args.output {
        Some(path) => std::fs::write(path, csv).map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => print!("{csv}"),
    }
    Ok(0)
}

/// `arbiter warp-parse`: what Arbiter reads from a warp output, per operation, as JSON.
pub fn run_warp_parse(args: WarpParseArgs) -> Result<i32, String> {
    let name = args.file.display().to_string();
    let text = crate::read_input(&args.file)?;
    let ops = if text.trim_start().starts_with('{') {
        judge::warp::warp_output::parse_warp_json(&text)
    } else {
        judge::warp::warp_output::parse_warp_text(&text)
    }
    .map_err(|e| format!("{name}: {e}"))?;
    println!("{}", serde_json::to_string_pretty(&ops).map_err(|e| e.to_string())?);
    Ok(0)
}
