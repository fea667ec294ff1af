//! The words every part of Arbiter uses for kinds, states and verdicts, with their stored spelling
//! (`as_str` / `FromStr` round-trip; the store keeps these strings) and the CLI/API exit codes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A stored word that is not one of the vocabulary's spellings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseVocabError {
    pub what: &'static str,
    pub value: String,
    pub expected: &'static [&'static str],
}

impl fmt::Display for ParseVocabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} {:?}; expected one of: {}", self.what, self.value, self.expected.join(", "))
    }
}

impl std::error::Error for ParseVocabError {}

/// Declares a string-backed enum with one spelling per variant, used in the store, the API and the UI.
macro_rules! vocab_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            const SPELLINGS: &'static [&'static str] = &[$($text),+];

            /// The stored spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = ParseVocabError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(ParseVocabError { what: $what, value: other.to_string(), expected: Self::SPELLINGS }),
                }
            }
        }
    };
}

vocab_enum!(
    /// The two kinds of experiment Arbiter judges.
    ExperimentKind, "experiment kind" {
        /// Per-stage CPU cost of a data pipeline from `zephyr.stage` rows.
        Pipeline => "pipeline",
        /// An S3 server's throughput and latency across a workload × drive-sync matrix.
        Warp => "warp",
    }
);

vocab_enum!(
    /// Where an experiment is in its life.
    ExperimentStatus, "experiment status" {
        Queued => "queued",
        Running => "running",
        /// Every trial ended and the judge ran.
        Judged => "judged",
        /// The experiment could not be run (launch or server error); no verdict.
        Errored => "errored",
        Cancelled => "cancelled",
    }
);

vocab_enum!(
    /// The state of one trial (one run of one arm; for warp, one phase).
    TrialState, "trial state" {
        Queued => "queued",
        Running => "running",
        Succeeded => "succeeded",
        /// The code under test failed: a FAILED stage row, a non-zero exit, an out-of-memory kill.
        Failed => "failed",
        /// The infrastructure failed; the trial carries no performance data (see [`InfraReason`]).
        InfraFailed => "infra_failed",
        Cancelled => "cancelled",
    }
);

vocab_enum!(
    /// What a trial is for (`measurement-protocol` issue; one definition, read by the conclusion, the
    /// adaptive looks, the pages and the API). Only `measured` trials are judged.
    TrialRole, "trial role" {
        /// A trial of the experiment's plan: its rows are judged (or calibrate, or measure a baseline).
        Measured => "measured",
        /// Run first and never judged: it takes the host's first-trial cost (a cold page cache, the
        /// interpreter's and the log server's first work). It belongs to no pair (`repeat_index` −1) and
        /// counts toward no budget.
        WarmUp => "warm_up",
    }
);

impl TrialRole {
    /// The repeat index a warm-up trial is stored with: it belongs to no pair.
    pub const WARM_UP_REPEAT: i64 = -1;

    /// The role a trial planned at `repeat_index` has (a warm-up is planned outside every repeat).
    pub fn of_repeat(repeat_index: i64) -> TrialRole {
        if repeat_index < 0 {
            TrialRole::WarmUp
        } else {
            TrialRole::Measured
        }
    }
}

// Not derived: the enum is declared by `vocab_enum!`, which takes no `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for TrialRole {
    fn default() -> Self {
        TrialRole::Measured
    }
}

impl TrialState {
    /// True once the trial can no longer change state.
    pub fn is_terminal(self) -> bool {
        !matches!(self, TrialState::Queued | TrialState::Running)
    }
}

vocab_enum!(
    /// Why a trial was `infra_failed`.
    InfraReason, "infrastructure failure reason" {
        Timeout => "timeout",
        Preempted => "preempted",
        NodeFail => "node_fail",
        Interrupted => "interrupted",
        NoRows => "no_rows",
        StatsUnreachable => "stats_unreachable",
        LauncherError => "launcher_error",
        /// A cluster engine did not answer about a running job for longer than its launcher allows.
        EngineUnreachable => "engine_unreachable",
        /// The engine no longer knows the job (e.g. its controller restarted without its state).
        JobLost => "job_lost",
        /// The rows finelog holds for the trial's execution ids cannot be the trial's own: an id already
        /// belongs to another trial, or a row was written outside the trial's run.
        ForeignRows => "foreign_rows",
    }
);

vocab_enum!(
    /// The answer an experiment gives. Pipeline experiments use the lower-case words, warp gates the
    /// upper-case ones, exactly as their reports print them.
    Verdict, "verdict" {
        Pass => "pass",
        Tradeoff => "tradeoff",
        Regression => "regression",
        Inconclusive => "inconclusive",
        WarpPass => "PASS",
        WarpWarn => "WARN",
        /// A FAIL turned into a WARN by an exemption with a reason; the rows keep FAIL.
        WarpExempted => "EXEMPTED",
        WarpFail => "FAIL",
        WarpInconclusive => "INCONCLUSIVE",
    }
);

/// Process exit codes shared by the CLI and the API's CI helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitCode {
    /// pass, tradeoff, PASS, WARN, exempted FAIL.
    Ok = 0,
    /// regression, FAIL (incl. missing evidence).
    Regression = 1,
    /// Usage, bad input, server or launch error.
    Usage = 2,
    /// inconclusive, INCONCLUSIVE.
    Inconclusive = 3,
    /// Cancelled; no verdict.
    NoVerdict = 4,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        self as i32
    }
}

impl Verdict {
    /// The kind of experiment this verdict belongs to.
    pub fn kind(self) -> ExperimentKind {
        match self {
            Verdict::Pass | Verdict::Tradeoff | Verdict::Regression | Verdict::Inconclusive => ExperimentKind::Pipeline,
            _ => ExperimentKind::Warp,
        }
    }

    /// The exit code a CI job sees for this verdict.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Verdict::Pass | Verdict::Tradeoff | Verdict::WarpPass | Verdict::WarpWarn | Verdict::WarpExempted => ExitCode::Ok,
            Verdict::Regression | Verdict::WarpFail => ExitCode::Regression,
            Verdict::Inconclusive | Verdict::WarpInconclusive => ExitCode::Inconclusive,
        }
    }

    /// Whether a reader should treat this as good news, bad news, or neither.
    pub fn tone(self) -> Tone {
        match self {
            Verdict::Pass | Verdict::WarpPass => Tone::Good,
            Verdict::Tradeoff | Verdict::WarpWarn | Verdict::WarpExempted => Tone::Mixed,
            Verdict::Regression | Verdict::WarpFail => Tone::Bad,
            Verdict::Inconclusive | Verdict::WarpInconclusive => Tone::Unknown,
        }
    }
}

/// How a verdict reads at a glance; pages pair it with an icon and the word, never colour alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    Good,
    Mixed,
    Bad,
    Unknown,
}

impl Tone {
    pub fn icon(self) -> &'static str {
        match self {
            Tone::Good => "✅",
            Tone::Mixed => "⚠️",
            Tone::Bad => "❌",
            Tone::Unknown => "❔",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_round_trips() {
        for k in ExperimentKind::ALL {
            assert_eq!(k.as_str().parse::<ExperimentKind>().unwrap(), *k);
        }
        for s in ExperimentStatus::ALL {
            assert_eq!(s.as_str().parse::<ExperimentStatus>().unwrap(), *s);
        }
        for s in TrialState::ALL {
            assert_eq!(s.as_str().parse::<TrialState>().unwrap(), *s);
        }
        for r in InfraReason::ALL {
            assert_eq!(r.as_str().parse::<InfraReason>().unwrap(), *r);
        }
        for r in TrialRole::ALL {
            assert_eq!(r.as_str().parse::<TrialRole>().unwrap(), *r);
        }
        assert_eq!(TrialRole::of_repeat(TrialRole::WARM_UP_REPEAT), TrialRole::WarmUp);
        assert_eq!(TrialRole::of_repeat(0), TrialRole::Measured);
        for v in Verdict::ALL {
            assert_eq!(v.as_str().parse::<Verdict>().unwrap(), *v);
            let json = serde_json::to_string(v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
        }
    }

    #[test]
    fn unknown_word_names_the_vocabulary() {
        let err = "slower".parse::<Verdict>().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("unknown verdict \"slower\""), "{text}");
        assert!(text.contains("regression") && text.contains("FAIL"), "{text}");
        // Case matters: the pipeline and warp words are distinct.
        assert_eq!("PASS".parse::<Verdict>().unwrap(), Verdict::WarpPass);
        assert_eq!("pass".parse::<Verdict>().unwrap(), Verdict::Pass);
        assert!("Pass".parse::<Verdict>().is_err());
    }

    #[test]
    fn exit_codes_follow_the_design_table() {
        use ExitCode::*;
        let table = [
            (Verdict::Pass, Ok),
            (Verdict::Tradeoff, Ok),
            (Verdict::Regression, Regression),
            (Verdict::Inconclusive, Inconclusive),
            (Verdict::WarpPass, Ok),
            (Verdict::WarpWarn, Ok),
            (Verdict::WarpExempted, Ok),
            (Verdict::WarpFail, Regression),
            (Verdict::WarpInconclusive, Inconclusive),
        ];
        assert_eq!(table.len(), Verdict::ALL.len(), "every verdict has a row");
        for (verdict, code) in table {
            assert_eq!(verdict.exit_code(), code, "{verdict}");
        }
        assert_eq!(ExitCode::Usage.code(), 2);
        assert_eq!(ExitCode::NoVerdict.code(), 4);
    }

    #[test]
    fn verdict_kinds_split_by_spelling_case() {
        for v in Verdict::ALL {
            let upper = v.as_str().chars().all(|c| c.is_ascii_uppercase());
            assert_eq!(v.kind() == ExperimentKind::Warp, upper, "{v}");
        }
    }

    #[test]
    fn terminal_trial_states() {
        let open: Vec<_> = TrialState::ALL.iter().filter(|s| !s.is_terminal()).collect();
        assert_eq!(open, [&TrialState::Queued, &TrialState::Running]);
    }
}
