//! Suite definitions: a `suites/*.toml` file parsed and checked (its fingerprint fields, `[judge]`,
//! `[warp]`, `[cluster]`, `[[schedules]]` and `[notify]`). Pure but for reading the folder; the engine
//! copies them into the store, the server serves them, and the app reads them typed.

pub mod cluster;
pub mod definition;
pub mod notify;
pub mod schedule;
pub mod warp;

pub use definition::SuiteDefinition;

use std::path::{Path, PathBuf};

/// One suite file, read and checked.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    pub path: PathBuf,
    pub definition: SuiteDefinition,
    /// The file's text, comments and all, its relative paths made absolute as in `definition`
    /// ([`text_for_store`]); `None` when it could not be rewritten to read back as `definition`.
    pub text: Option<String>,
}

fn is_url(repository: &str) -> bool {
    repository.contains("://") || repository.starts_with("git@")
}

/// Reads every `*.toml` in `dir` (none when the folder does not exist). One bad file fails the whole
/// load with the file and its problem named: a server must not start with half its suites.
pub fn load_dir(dir: &Path) -> Result<Vec<LoadedSuite>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read the suites folder {}: {e}", dir.display())),
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    let mut suites: Vec<LoadedSuite> = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut definition = SuiteDefinition::from_toml(&text).map_err(|e| format!("suite file {}: {e}", path.display()))?;
        let as_written = definition.clone();
        if let Some(first) = suites.iter().find(|s| s.definition.name == definition.name) {
            return Err(format!("suite {:?} is defined twice: {} and {}", definition.name, first.path.display(), path.display()));
        }
        // A local repository is relative to the suite file's folder (stored absolute, so that the
        // suites page shows a definition that means the same wherever it is saved from).
        let folder = std::path::absolute(path.parent().unwrap_or(Path::new(".")))
            .unwrap_or_else(|_| path.parent().unwrap_or(Path::new(".")).to_path_buf());
        if !is_url(&definition.repository) && Path::new(&definition.repository).is_relative() {
            let base = folder.as_path();
            definition.repository = base.join(&definition.repository).to_string_lossy().into_owned();
        }
        // So are a warp suite's prebuilt binaries and credentials file.
        if let Some(warp) = definition.warp.as_mut() {
            let base = folder.as_path();
            let absolute = |p: &mut String| {
                if Path::new(p.as_str()).is_relative() {
                    *p = base.join(p.as_str()).to_string_lossy().into_owned();
                }
            };
            warp.binaries.values_mut().for_each(absolute);
            warp.credentials_file.iter_mut().for_each(absolute);
            warp.warp_bin.iter_mut().filter(|p| p.contains('/')).for_each(absolute);
        }
        let text = text_for_store(&text, &as_written, &definition);
        suites.push(LoadedSuite { path, definition, text });
    }
    Ok(suites)
}

/// A TOML string value as it is written (`"…"`, escaped where needed).
fn quoted(value: &str) -> String {
    toml::Value::String(value.to_string()).to_string()
}

/// Replaces the first `"old"` or `'old'` value in `text` with `new` written as a TOML string.
fn replace_value(text: &mut String, old: &str, new: &str) {
    for written in [quoted(old), format!("'{old}'")] {
        if let Some(at) = text.find(&written) {
            text.replace_range(at..at + written.len(), &quoted(new));
            return;
        }
    }
}

/// The text a suite is shown and edited as, comments and all: `text` (which parses to `as_written`) with
/// the values loading changed — relative paths made absolute — written as in `stored`. Kept only when it
/// reads back as exactly `stored`; `None` otherwise (the page then writes the definition out without
/// its comments).
pub fn text_for_store(text: &str, as_written: &SuiteDefinition, stored: &SuiteDefinition) -> Option<String> {
    let mut out = text.to_string();
    let mut pairs: Vec<(&str, &str)> = vec![(&as_written.repository, &stored.repository)];
    if let (Some(a), Some(b)) = (&as_written.warp, &stored.warp) {
        pairs.extend(a.binaries.values().zip(b.binaries.values()).map(|(x, y)| (x.as_str(), y.as_str())));
        pairs.extend(a.credentials_file.iter().zip(&b.credentials_file).map(|(x, y)| (x.as_str(), y.as_str())));
        pairs.extend(a.warp_bin.iter().zip(&b.warp_bin).map(|(x, y)| (x.as_str(), y.as_str())));
    }
    for (old, new) in pairs.into_iter().filter(|(a, b)| a != b) {
        replace_value(&mut out, old, new);
    }
    (SuiteDefinition::from_toml(&out).ok().as_ref() == Some(stored)).then_some(out)
}

/// A stored suite's text with its secrets replaced by [`REDACTED`] (as [`redacted`] does to the
/// definition), comments kept; `None` when the result does not read back as the redacted definition
/// (the page then shows the definition written out, redacted, without comments).
pub fn redacted_text(text: &str, definition: &serde_json::Value) -> Option<String> {
    let want = redacted(definition);
    let mut secrets: Vec<String> = Vec::new();
    if let Some(w) = definition.pointer("/notify/webhook").and_then(|w| w.as_str()) {
        secrets.push(w.to_string());
    }
    for table in ["/cluster/env", "/warp/server_env"] {
        if let Some(map) = definition.pointer(table).and_then(|v| v.as_object()) {
            secrets.extend(map.values().filter_map(|v| v.as_str()).map(str::to_string));
        }
    }
    let mut out = text.to_string();
    for secret in &secrets {
        // Every occurrence: two variables may hold one token.
        for written in [quoted(secret), format!("'{secret}'")] {
            out = out.replace(&written, &quoted(REDACTED));
        }
    }
    // Read as written, unchecked: "<redacted>" is no URL a check would take.
    let back = toml::from_str::<SuiteDefinition>(&out).ok().and_then(|d| serde_json::to_value(d).ok())?;
    (back == want && secrets.iter().filter(|s| !s.is_empty()).all(|s| !out.contains(s.as_str()))).then_some(out)
}

/// A suite written in the UI: checked like a file, but with nothing to be relative to, so its
/// repository (and a warp suite's binaries) must be absolute paths or clone URLs.
pub fn parse_for_store(text: &str) -> Result<(String, judge::ExperimentKind, serde_json::Value), String> {
    let definition = SuiteDefinition::from_toml(text)?;
    if !is_url(&definition.repository) && Path::new(&definition.repository).is_relative() {
        return Err(format!("repository {:?}: give an absolute path or a clone URL", definition.repository));
    }
    let json = serde_json::to_value(&definition).map_err(|e| e.to_string())?;
    Ok((definition.name, definition.kind, json))
}

/// A stored definition as TOML (what the suites page shows and edits).
/// What stands in for a secret shown to someone who may not see it.
pub const REDACTED: &str = "<redacted>";

/// A stored suite with its secrets replaced by [`REDACTED`], for everyone but admins: the webhook URL (its
/// URL is its credential) and every value of `[cluster] env` and `[warp] server_env` (where a suite's
/// author puts tokens and passwords). The names stay, so the reader sees what is set.
pub fn redacted(definition: &serde_json::Value) -> serde_json::Value {
    let mut d = definition.clone();
    if let Some(w) = d.pointer_mut("/notify/webhook").filter(|w| w.is_string()) {
        *w = REDACTED.into();
    }
    for table in ["/cluster/env", "/warp/server_env"] {
        if let Some(map) = d.pointer_mut(table).and_then(|v| v.as_object_mut()) {
            for v in map.values_mut() {
                *v = REDACTED.into();
            }
        }
    }
    d
}

pub fn to_toml(definition: &serde_json::Value) -> Result<String, String> {
    let d: SuiteDefinition = serde_json::from_value(definition.clone()).map_err(|e| format!("the stored suite does not parse: {e}"))?;
    let mut table = toml::Table::try_from(&d).map_err(|e| format!("cannot write the suite as TOML: {e}"))?;
    // Fields left at nothing are not written, at any depth: a warp suite shows no `command = []`,
    // `cpu = 0.0` or `deploy_hook = []`, nor the pipeline trial order its phases do not use.
    fn prune(table: &mut toml::Table) {
        for (_, v) in table.iter_mut() {
            if let toml::Value::Table(t) = v {
                prune(t);
            }
        }
        table.retain(|_, v| match v {
            toml::Value::Array(a) => !a.is_empty(),
            toml::Value::Table(t) => !t.is_empty(),
            _ => true,
        });
    }
    if d.resources == definition::Resources::default() {
        table.remove("resources");
    }
    if d.kind == judge::ExperimentKind::Warp {
        if let Some(toml::Value::Table(defaults)) = table.get_mut("defaults") {
            defaults.remove("order");
        }
    }
    prune(&mut table);
    toml::to_string_pretty(&table).map_err(|e| format!("cannot write the suite as TOML: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_suite_file_is_kept_with_its_comments_and_absolute_paths_and_shown_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/zephyr-pipeline.toml");
        let text = std::fs::read_to_string(shipped).unwrap();
        assert!(text.contains("# The example suite") && text.contains("repository = \"../examples/zephyr-pipeline/repo\""));
        let text = format!("{text}\n[notify]\n# who hears of it\nwebhook = \"https://hooks.example/secret-path\"\n");
        std::fs::write(dir.path().join("zephyr-pipeline.toml"), &text).unwrap();
        let loaded = super::load_dir(dir.path()).unwrap().remove(0);
        let kept = loaded.text.expect("the file's text is kept");
        assert!(kept.contains("# The example suite") && kept.contains("# who hears of it"), "comments kept:\n{kept}");
        let absolute = format!("repository = \"{}\"", loaded.definition.repository);
        assert!(loaded.definition.repository.starts_with('/') && kept.contains(&absolute), "the path as stored:\n{kept}");
        assert_eq!(super::SuiteDefinition::from_toml(&kept).unwrap(), loaded.definition, "it reads back as what is stored");
        // A reader who is no admin: the webhook hidden, the comments still there.
        let json = serde_json::to_value(&loaded.definition).unwrap();
        let shown = super::redacted_text(&kept, &json).expect("redactable");
        assert!(!shown.contains("secret-path") && shown.contains("webhook = \"<redacted>\"") && shown.contains("# who hears of it"), "{shown}");
        // A value it cannot find as written (an escape in the file) is never shown: no text at all.
        let escaped = kept.replace("https://hooks.example/secret-path", "https://hooks.example/secret\\u002Dpath");
        let json = serde_json::to_value(super::SuiteDefinition::from_toml(&escaped).unwrap()).unwrap();
        assert_eq!(super::redacted_text(&escaped, &json), None);
    }

    #[test]
    fn a_warp_suite_is_written_back_without_pipeline_fields_and_reads_the_same() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
        let text = std::fs::read_to_string(dir.join("s3s-fs-warp.toml")).unwrap();
        let suite = super::SuiteDefinition::from_toml(&text).unwrap();
        let written = super::to_toml(&serde_json::to_value(&suite).unwrap()).unwrap();
        for absent in ["command =", "cpu =", "ram =", "[resources]", "[fingerprint]", "locality", "deploy_hook", "order = \"interleaved\""]
        {
            assert!(!written.contains(absent), "{absent:?} in\n{written}");
        }
        assert!(written.contains("[warp.notes]") && written.contains("delayed ACK"), "{written}");
        assert_eq!(super::SuiteDefinition::from_toml(&written).unwrap(), suite, "{written}");
        let facts = suite.warp.as_ref().unwrap().facts();
        let fact = |k: &str| facts.iter().find(|(w, _)| *w == k).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("{k}: {facts:?}"));
        assert_eq!(fact("Budgets"), "FAIL beyond 10 %, WARN beyond 5 % (relative to the baseline)");
        assert!(fact("Server").starts_with(
            "built from each arm's SHA by running: sh build.sh → target/s3-server (cached by SHA); started per phase as: {binary} --host"
        ));
        assert!(fact("Smoke preset").contains("1 round of 1s each"), "{facts:?}");
        assert_eq!(fact("A launch may choose"), "rounds 1–10 · duration 1s–5m · warm-up 0s–1m · cool-down 0s–1m · concurrency 1–64");
        assert!(fact("Note").starts_with("get-4KiB: s3s-fs writes"), "{facts:?}");
        // A pipeline suite keeps its command and resources.
        let text = std::fs::read_to_string(dir.join("zephyr-pipeline.toml")).unwrap();
        let written = super::to_toml(&serde_json::to_value(super::SuiteDefinition::from_toml(&text).unwrap()).unwrap()).unwrap();
        assert!(written.contains("command = [") && written.contains("[resources]"), "{written}");
    }

    #[test]
    fn a_suite_may_default_to_auto_trials_within_a_budget() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
        let text = std::fs::read_to_string(dir.join("zephyr-pipeline.toml")).unwrap();
        assert!(text.contains("[defaults]\ntrials = 3\n"), "the shipped suite's defaults moved");
        let with = |defaults: &str| text.replacen("[defaults]\ntrials = 3\n", &format!("[defaults]\n{defaults}\n"), 1);
        let auto = super::SuiteDefinition::from_toml(&with("trials = \"auto\"\nmax_trials = 12\nmax_minutes = 90"));
        let auto = auto.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (auto.defaults.trials, auto.defaults.max_trials, auto.defaults.max_minutes),
            (wire::launch::JsonTrials::AUTO, 12, Some(90))
        );
        let written = super::to_toml(&serde_json::to_value(&auto).unwrap()).unwrap();
        assert!(written.contains("trials = \"auto\"") && written.contains("max_trials = 12"), "{written}");
        assert_eq!(super::SuiteDefinition::from_toml(&written).unwrap(), auto, "{written}");
        let plain = super::SuiteDefinition::from_toml(&text).unwrap();
        let written = super::to_toml(&serde_json::to_value(&plain).unwrap()).unwrap();
        assert!(!written.contains("max_trials"), "the default budget is not written out: {written}");
        let err = super::SuiteDefinition::from_toml(&with("trials = \"auto\"\nmax_trials = 1")).unwrap_err();
        assert!(err.contains("defaults.max_trials 1"), "{err}");
        let warp = std::fs::read_to_string(dir.join("s3s-fs-warp.toml")).unwrap().replacen(
            "[defaults]\ntrials = 1",
            "[defaults]\ntrials = \"auto\"",
            1,
        );
        let err = super::SuiteDefinition::from_toml(&warp).unwrap_err();
        assert!(err.contains("adaptive trials are for pipeline suites"), "{err}");
    }

    #[test]
    fn the_shipped_suites_commented_schedule_is_valid_when_uncommented() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/zephyr-pipeline.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let start = text.find("# [[schedules]]").expect("the example schedule");
        let uncommented = format!("{}{}", &text[..start], text[start..].replace("# ", ""));
        let suite = super::SuiteDefinition::from_toml(&uncommented).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<(&str, crate::schedule::ScheduleMode)> = suite.schedules.iter().map(|s| (s.name.as_str(), s.mode)).collect();
        assert_eq!(names, [("nightly", crate::schedule::ScheduleMode::Baseline), ("canary", crate::schedule::ScheduleMode::Canary)]);
        let bad = uncommented.replace("cron = \"0 3 * * *\"", "cron = \"0 25 * * *\"");
        assert!(super::SuiteDefinition::from_toml(&bad).unwrap_err().starts_with("schedule \"nightly\": cron: "));
        let not_allowed = uncommented.replace("sample = \"local/small\"", "sample = \"s3://elsewhere\"");
        assert!(super::SuiteDefinition::from_toml(&not_allowed).unwrap_err().contains("schedule \"nightly\""));
    }

    #[test]
    fn a_suites_judge_table_sets_its_margins_and_bad_values_are_named() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/zephyr-pipeline.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let suite = super::SuiteDefinition::from_toml(&text).unwrap();
        let m = suite.judge_method(true);
        assert_eq!((m.cpu_margin_pct, m.elapsed_margin_pct, m.alpha, m.paired), (2.0, 25.0, 0.01, true));
        let wider = text.replace("cpu_margin_pct = 2\n", "cpu_margin_pct = 5\n");
        assert_eq!(super::SuiteDefinition::from_toml(&wider).unwrap().judge_method(false).cpu_margin_pct, 5.0);
        for (from, to, says) in [
            ("cpu_margin_pct = 2\n", "cpu_margin_pct = 0\n", "judge.cpu_margin_pct = 0: must be a percentage above 0 and below 100"),
            ("alpha = 0.01\n", "alpha = 0.5\n", "judge.alpha = 0.5: must be above 0 and below 0.5"),
            ("alpha = 0.01\n", "alpha = 0.01\nbudget = 3\n", "unknown field `budget`"),
        ] {
            let err = super::SuiteDefinition::from_toml(&text.replace(from, to)).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn a_stored_suite_written_as_toml_reads_back_the_same() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
        let suites = super::load_dir(&dir).unwrap();
        assert!(suites.len() >= 2);
        for s in suites {
            let json = serde_json::to_value(&s.definition).unwrap();
            let text = super::to_toml(&json).unwrap();
            let (name, kind, back) = super::parse_for_store(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!((name.as_str(), kind, &back), (s.definition.name.as_str(), s.definition.kind, &json));
        }
        let relative = super::to_toml(&serde_json::to_value(&super::load_dir(&dir).unwrap()[0].definition).unwrap())
            .unwrap()
            .replace(&std::fs::canonicalize(&dir).unwrap_or(dir.clone()).to_string_lossy().to_string(), "rel");
        assert!(super::parse_for_store(&relative.replace("repository = \"/", "repository = \"rel/")).unwrap_err().contains("absolute"));
    }
}
