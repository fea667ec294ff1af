//! The rules a launch request must follow before anything is resolved or run: plain git refs, arm
//! names, text fields, trial counts and the fingerprint's typed fields. The server applies them when it
//! resolves a launch; the launch form applies the very same functions as the user types, so a value the
//! form accepts is one the server accepts, with the same message when it is not.

use crate::field::FieldError;
use serde::{Deserialize, Serialize};

/// A suite's fingerprint field: its type, what values it allows, and its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FieldSpec {
    String {
        #[serde(default)]
        allowed: Vec<String>,
        #[serde(default)]
        default: Option<String>,
    },
    Integer {
        #[serde(default)]
        min: Option<i64>,
        #[serde(default)]
        max: Option<i64>,
        #[serde(default)]
        allowed: Vec<i64>,
        #[serde(default)]
        default: Option<i64>,
    },
    Bool {
        #[serde(default)]
        default: Option<bool>,
    },
}

impl FieldSpec {
    pub fn default_value(&self) -> Option<serde_json::Value> {
        match self {
            FieldSpec::String { default, .. } => default.clone().map(serde_json::Value::from),
            FieldSpec::Integer { default, .. } => default.map(serde_json::Value::from),
            FieldSpec::Bool { default } => default.map(serde_json::Value::from),
        }
    }

    /// The value a form's text means for this field: a number for an integer field, true/false for a
    /// boolean, the text itself otherwise (an unparsable number stays text, so the check names it).
    pub fn value_of_text(&self, text: &str) -> serde_json::Value {
        let t = text.trim();
        match self {
            FieldSpec::Integer { .. } => t.parse::<i64>().map(serde_json::Value::from).unwrap_or_else(|_| t.into()),
            FieldSpec::Bool { .. } => match t {
                "true" => true.into(),
                "false" => false.into(),
                _ => t.into(),
            },
            FieldSpec::String { .. } => t.into(),
        }
    }

    /// Checks one value against the field: its type, the characters, the range and the allowed values.
    pub fn check(&self, value: &serde_json::Value) -> Result<(), String> {
        match (self, value) {
            (FieldSpec::String { allowed, .. }, serde_json::Value::String(s)) => {
                if !is_safe_value(s) {
                    return Err(format!("{s:?} holds characters a fingerprint value may not (use letters, digits and ._/:@=+,-)"));
                }
                if !allowed.is_empty() && !allowed.contains(s) {
                    return Err(format!("{s:?} is not allowed; use one of {}", allowed.join(", ")));
                }
                Ok(())
            }
            (FieldSpec::Integer { min, max, allowed, .. }, serde_json::Value::Number(n)) => {
                let v = n.as_i64().ok_or_else(|| format!("{n} is not an integer"))?;
                if min.is_some_and(|m| v < m) || max.is_some_and(|m| v > m) {
                    return Err(match (min, max) {
                        (Some(lo), Some(hi)) => format!("{v}: must be between {lo} and {hi}"),
                        (Some(lo), None) => format!("{v}: must be at least {lo}"),
                        (None, Some(hi)) => format!("{v}: must be at most {hi}"),
                        (None, None) => unreachable!("a bound was broken"),
                    });
                }
                if !allowed.is_empty() && !allowed.contains(&v) {
                    return Err(format!("{v} is not allowed; use one of {allowed:?}"));
                }
                Ok(())
            }
            (FieldSpec::Bool { .. }, serde_json::Value::Bool(_)) => Ok(()),
            (spec, value) => {
                let wanted = match spec {
                    FieldSpec::String { .. } => "a string",
                    FieldSpec::Integer { .. } => "an integer",
                    FieldSpec::Bool { .. } => "a boolean",
                };
                Err(format!("{value} is not {wanted}"))
            }
        }
    }
}

/// A fingerprint field's value checked, named `fingerprint.NAME` as the API's body holds it.
pub fn check_fingerprint_field(name: &str, spec: &FieldSpec, value: &serde_json::Value) -> Result<(), FieldError> {
    spec.check(value).map_err(|e| FieldError::new(format!("fingerprint.{name}"), e))
}

/// A fingerprint field's value for a launch: the given one, else the field's default; checked.
pub fn fingerprint_value(name: &str, spec: &FieldSpec, given: Option<&serde_json::Value>) -> Result<serde_json::Value, FieldError> {
    let value = match given {
        Some(v) => v.clone(),
        None => spec.default_value().ok_or_else(|| FieldError::new(format!("fingerprint.{name}"), "has no default; give a value"))?,
    };
    check_fingerprint_field(name, spec, &value)?;
    Ok(value)
}

/// Characters a substituted value may hold: enough for refs, paths, URLs and prefixes, nothing a
/// shell or an option parser would read as syntax.
pub fn is_safe_value(v: &str) -> bool {
    !v.is_empty() && v.len() <= 1024 && !v.starts_with('-') && v.chars().all(|c| c.is_ascii_alphanumeric() || "._/:@=+,-".contains(c))
}

/// A plain git ref or SHA: never an option, never a range.
pub fn is_safe_ref(r: &str) -> bool {
    (1..=200).contains(&r.len())
        && !r.starts_with('-')
        && !r.contains("..")
        && r.chars().all(|c| c.is_ascii_alphanumeric() || "._/@^~+-".contains(c))
}

/// `field` names the form field or JSON key (`head`, `base`, `arms[0].ref`).
pub fn check_ref(field: &str, r: &str) -> Result<(), FieldError> {
    if is_safe_ref(r) {
        return Ok(());
    }
    Err(FieldError::new(field, format!("{} is not a plain git ref (letters, digits and ._/@^~+-, not starting with '-')", crate::text::quoted(r))))
}

/// An extra arm's name (the field that carries it: `arms[1].name`): its characters, and not the name of
/// control, treatment or an `earlier` extra arm.
pub fn check_arm_name<'a>(field: &str, name: &str, earlier: impl IntoIterator<Item = &'a str>) -> Result<(), FieldError> {
    let ok = (1..=40).contains(&name.len()) && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !ok {
        return Err(FieldError::new(field, format!("{name:?}: use 1–40 lower-case letters, digits, '-' or '_'")));
    }
    if ["control", "treatment"].into_iter().chain(earlier).any(|n| n == name) {
        return Err(FieldError::new(field, format!("{name:?} is used twice")));
    }
    Ok(())
}

/// A title or a reason: 1–`max` characters of plain text.
pub fn check_text(field: &str, text: &str, max: usize) -> Result<(), FieldError> {
    if text.trim().is_empty() || text.chars().count() > max || text.chars().any(char::is_control) {
        return Err(FieldError::new(field, format!("give 1–{max} characters of plain text")));
    }
    Ok(())
}

/// Settings no arm may override, even where a suite's pattern would admit them: they change how programs
/// are found or loaded (`PATH`, `LD_PRELOAD`, `PYTHONPATH`, proxies, TLS and locale data), or Arbiter sets them.
const RESERVED_SETTINGS: [&str; 10] = ["PATH", "HOME", "SHELL", "IFS", "ENV", "BASH_ENV", "TMPDIR", "LANG", "TZ", "OPENSSL_CONF"];
const RESERVED_PREFIXES: [&str; 17] = [
    "LD_",
    "DYLD_",
    "PYTHON",
    "ARBITER_",
    "GIT_",
    "LC_",
    "GCONV_",
    "HTTP_",
    "HTTPS_",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_",
    "CARGO_",
    "RUSTC",
    "RUSTFLAGS",
    "RUSTDOC",
    "RUSTUP_",
];

/// A suite's `overrides` pattern: an UPPER_CASE setting name, or a prefix ending in `*` (`ZEPHYR_*`), that
/// names nothing reserved.
pub fn check_override_pattern(pattern: &str) -> Result<(), String> {
    let name = pattern.strip_suffix('*').unwrap_or(pattern);
    if !(1..=64).contains(&name.len()) || !name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
        return Err(format!("overrides {pattern:?}: give an UPPER_CASE setting name, or a prefix ending in '*' (\"ZEPHYR_*\")"));
    }
    let star = pattern.ends_with('*');
    let reserved = RESERVED_SETTINGS.iter().any(|r| if star { r.starts_with(name) } else { *r == name })
        || RESERVED_PREFIXES.iter().any(|p| name.starts_with(p) || (star && p.starts_with(name)));
    if reserved {
        return Err(format!(
            "overrides {pattern:?} admits settings that are reserved (how programs are found or loaded, or Arbiter's own)"
        ));
    }
    Ok(())
}

/// An arm's override `key`: a setting the suite's `overrides` patterns admit (an allowlist: a suite that
/// lists none takes no overrides), and never a reserved one.
pub fn check_override(arm: &str, key: &str, allowed: &[String]) -> Result<(), FieldError> {
    let field = format!("arm {arm:?}");
    if !(1..=64).contains(&key.len()) || !key.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
        return Err(FieldError::new(field, format!("override {key:?} must be an UPPER_CASE setting name")));
    }
    if RESERVED_SETTINGS.contains(&key) || RESERVED_PREFIXES.iter().any(|p| key.starts_with(p)) {
        return Err(FieldError::new(field, format!("override {key:?} is reserved (it changes how programs are found or loaded, or Arbiter sets it)")));
    }
    let admitted = allowed.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => p == key,
    });
    if !admitted {
        return Err(FieldError::new(
            field,
            match allowed.is_empty() {
                true => format!("override {key:?}: this suite takes no overrides (its `overrides` lists the settings an arm may change)"),
                false => format!("override {key:?} is not one of the settings this suite lets an arm change: {}", allowed.join(", ")),
            },
        ));
    }
    Ok(())
}

/// The most extra arms a launch may name (besides control and treatment).
pub const MAX_EXTRA_ARMS: usize = 16;

pub const TITLE_MAX: usize = 200;
pub const REASON_MAX: usize = 2000;

/// Trials per arm: a pipeline suite runs 1–100 per arm; a warp suite repeats its phase order 1–20 times.
/// The most trials an arm a pipeline launch may ask for.
pub const MAX_PIPELINE_TRIALS: u32 = 100;

pub fn check_trials(kind: crate::ExperimentKind, trials: u32) -> Result<(), FieldError> {
    match kind {
        crate::ExperimentKind::Pipeline if !(1..=MAX_PIPELINE_TRIALS).contains(&trials) => {
            Err(FieldError::new("trials", format!("{trials}: must be between 1 and {MAX_PIPELINE_TRIALS} trials an arm")))
        }
        crate::ExperimentKind::Warp if !(1..=20).contains(&trials) => {
            Err(FieldError::new("trials", format!("{trials} repeats of the phase order: a warp experiment allows between 1 and 20")))
        }
        _ => Ok(()),
    }
}

/// How many trials an arm runs: a fixed number, or `"auto"` — at least two pairs, then more while the
/// sequential design leaves the verdict undecided, up to a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum JsonTrials {
    Fixed(u32),
    Auto(AutoWord),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoWord {
    Auto,
}

/// Read by hand so that a wrong value is named ("trials: -1 is not …"), not "untagged enum JsonTrials".
impl<'de> Deserialize<'de> for JsonTrials {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        const WANTED: &str = "a whole number of trials an arm (1–100) or \"auto\"";
        impl serde::de::Visitor<'_> for Visit {
            type Value = JsonTrials;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(WANTED)
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<JsonTrials, E> {
                u32::try_from(n).map(JsonTrials::Fixed).map_err(|_| E::custom(format!("trials: {n} is too many; give {WANTED}")))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<JsonTrials, E> {
                u64::try_from(n).map_err(|_| E::custom(format!("trials: {n} is not {WANTED}"))).and_then(|n| self.visit_u64(n))
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<JsonTrials, E> {
                if x.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&x) {
                    return Ok(JsonTrials::Fixed(x as u32));
                }
                Err(E::custom(format!("trials: {x} is not {WANTED}")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<JsonTrials, E> {
                match v {
                    "auto" => Ok(JsonTrials::AUTO),
                    _ => Err(E::custom(format!("trials: {v:?} is not {WANTED}"))),
                }
            }
        }
        d.deserialize_any(Visit)
    }
}

impl JsonTrials {
    pub const AUTO: JsonTrials = JsonTrials::Auto(AutoWord::Auto);

    pub fn is_auto(self) -> bool {
        matches!(self, JsonTrials::Auto(_))
    }

    /// The fixed number, if it is one.
    pub fn fixed(self) -> Option<u32> {
        match self {
            JsonTrials::Fixed(n) => Some(n),
            JsonTrials::Auto(_) => None,
        }
    }
}

impl std::fmt::Display for JsonTrials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonTrials::Fixed(n) => write!(f, "{n}"),
            JsonTrials::Auto(_) => f.write_str("auto"),
        }
    }
}

impl std::str::FromStr for JsonTrials {
    type Err = String;

    /// A whole number, or `auto` (any case, spaces around ignored).
    fn from_str(s: &str) -> Result<JsonTrials, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(JsonTrials::AUTO);
        }
        s.parse::<u32>().map(JsonTrials::Fixed).map_err(|_| format!("trials: {s:?} is neither a whole number nor \"auto\""))
    }
}

impl From<u32> for JsonTrials {
    fn from(n: u32) -> JsonTrials {
        JsonTrials::Fixed(n)
    }
}

/// Trials as typed in the form or given to the CLI: a whole number in range, or `auto` — adaptive trials,
/// which only a pipeline A/B has (pairs added while the sequential design leaves the verdict undecided).
pub fn check_trials_text(kind: crate::ExperimentKind, text: &str) -> Result<JsonTrials, FieldError> {
    let trials: JsonTrials = text.parse().map_err(|e: String| FieldError::new("trials", e.trim_start_matches("trials: ")))?;
    check_trials_choice(kind, trials)?;
    Ok(trials)
}

/// A launch's trials: a number in range ([`check_trials`]), or `auto` for a pipeline suite.
pub fn check_trials_choice(kind: crate::ExperimentKind, trials: JsonTrials) -> Result<(), FieldError> {
    match trials.fixed() {
        Some(n) => check_trials(kind, n),
        None if kind == crate::ExperimentKind::Warp => Err(FieldError::new(
            "trials",
            "\"auto\" adds pairs of a pipeline A/B; a warp experiment repeats its phase order a fixed 1–20 times",
        )),
        None => Ok(()),
    }
}

/// The fewest trials an arm an adaptive launch may be held to: the sequential design's first look.
pub const MIN_AUTO_TRIALS: u32 = 2;

/// `max_trials` of an adaptive launch: from its first look (2 trials an arm) to the most a launch may ask.
pub fn check_max_trials(max: u32) -> Result<(), FieldError> {
    if !(MIN_AUTO_TRIALS..=MAX_PIPELINE_TRIALS).contains(&max) {
        return Err(FieldError::new(
            "max_trials",
            format!("{max}: an adaptive launch runs between {MIN_AUTO_TRIALS} and {MAX_PIPELINE_TRIALS} trials an arm at most"),
        ));
    }
    Ok(())
}

/// A warp launch's budgets, in %: 0 < warn ≤ fail ≤ 100.
pub fn check_budgets(fail_pct: f64, warn_pct: f64) -> Result<(), FieldError> {
    if !(warn_pct > 0.0 && warn_pct <= fail_pct && fail_pct <= 100.0) {
        return Err(FieldError::new("budgets", format!("give 0 < warn ({warn_pct}) ≤ fail ({fail_pct}) ≤ 100, in %")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn trials_read_from_json_name_a_wrong_value() {
        let read = |t: &str| serde_json::from_str::<JsonTrials>(t).map_err(|e| e.to_string());
        assert_eq!(read("3"), Ok(JsonTrials::Fixed(3)));
        assert_eq!(read("\"auto\""), Ok(JsonTrials::AUTO));
        for (bad, says) in [("-1", "trials: -1 is not a whole number"), ("1e11", "trials: 100000000000 is not"), ("\"many\"", "trials: \"many\" is not"), ("2.5", "trials: 2.5 is not")] {
            let e = read(bad).unwrap_err();
            assert!(e.starts_with(says) && !e.contains("untagged"), "{bad}: {e}");
        }
    }
    use super::*;
    use serde_json::json;

    #[test]
    fn fields() {
        let workers = FieldSpec::Integer { min: Some(1), max: Some(4), allowed: vec![], default: Some(2) };
        assert_eq!(workers.value_of_text(" 3 "), json!(3));
        assert!(workers.check(&workers.value_of_text("3")).is_ok());
        assert_eq!(workers.check(&json!(9)).unwrap_err(), "9: must be between 1 and 4");
        assert_eq!(workers.check(&workers.value_of_text("three")).unwrap_err(), "\"three\" is not an integer");
        let sample = FieldSpec::String { allowed: vec!["local/tiny".into()], default: None };
        assert!(sample.check(&json!("local/tiny")).is_ok());
        assert!(sample.check(&json!("local/huge")).unwrap_err().contains("use one of local/tiny"));
        assert!(FieldSpec::String { allowed: vec![], default: None }.check(&json!("a;rm -rf")).unwrap_err().contains("characters"));
        let flag = FieldSpec::Bool { default: None };
        assert!(flag.check(&flag.value_of_text("true")).is_ok() && flag.check(&flag.value_of_text("yes")).is_err());
    }

    #[test]
    fn refs_names_text_trials() {
        assert!(check_ref("head", "feature/x-1").is_ok());
        for bad in ["-x", "a..b", "a b", "", "$(x)"] {
            assert!(check_ref("head", bad).unwrap_err().to_string().starts_with("head: "), "{bad:?}");
        }
        let name = |n, earlier: &[&str]| check_arm_name("arms[0].name", n, earlier.iter().copied());
        assert!(name("low-mem", &[]).is_ok() && name("Low", &[]).is_err() && name("control", &[]).is_err());
        assert_eq!(name("a", &["b", "a"]).unwrap_err().to_string(), "arms[0].name: \"a\" is used twice");
        assert!(check_text("title", "  ", 10).is_err() && check_text("title", "ok", 10).is_ok() && check_text("t", "a\nb", 10).is_err());
        assert!(check_trials(crate::ExperimentKind::Pipeline, 100).is_ok() && check_trials(crate::ExperimentKind::Warp, 21).is_err());
        assert!(check_trials(crate::ExperimentKind::Pipeline, 0).is_err());
        assert!(check_budgets(10.0, 5.0).is_ok() && check_budgets(5.0, 10.0).is_err() && check_budgets(f64::NAN, 1.0).is_err());
    }

    #[test]
    fn overrides_are_an_allowlist_with_reserved_settings_beyond_any_pattern() {
        let allowed = vec!["POOL_SIZE".to_string(), "ZEPHYR_*".to_string()];
        assert!(check_override("a", "POOL_SIZE", &allowed).is_ok());
        assert!(check_override("a", "ZEPHYR_WORKERS", &allowed).is_ok());
        for refused in ["POOL", "HTTPS_PROXY", "OPENSSL_CONF", "GCONV_PATH", "LD_PRELOAD", "PATH", "pool_size"] {
            assert!(check_override("a", refused, &allowed).is_err(), "{refused}");
        }
        assert!(check_override("a", "POOL_SIZE", &[]).unwrap_err().problem.contains("takes no overrides"));
        assert!(check_override("a", "HTTPS_PROXY", &["*".to_string()]).is_err(), "reserved even under '*'");
        for bad in ["*", "H*", "HTTP*", "LD_*", "PATH", "lower", "A B"] {
            assert!(check_override_pattern(bad).is_err(), "{bad}");
        }
        for ok in ["ZEPHYR_*", "POOL_SIZE", "RUSTFS_*"] {
            assert!(check_override_pattern(ok).is_ok(), "{ok}");
        }
    }
}
