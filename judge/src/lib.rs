//! Arbiter's judging core.
//!
//! Everything here is pure: no IO, no async, no leptos. The server, the CLI and the browser bundle all
//! link this crate, so a rule of the verdict lives in exactly one place.
//!
//! This module tree starts with the shared vocabulary (experiment kinds, trial states, verdicts and their
//! exit codes, in `vocab`); the pipeline and warp judges grow beside it.

pub mod bisect;
pub mod changepoint;
pub mod comment;
pub mod cron;
pub mod csv_export;
pub mod field;
pub mod launch_rules;
pub mod pipeline;
pub mod stats;
pub mod text;
pub mod trend;
pub mod units;
pub mod vocab;
pub mod warp;

pub use field::FieldError;
pub use vocab::{ExitCode, ExperimentKind, ExperimentStatus, InfraReason, ParseVocabError, Tone, TrialRole, TrialState, Verdict};
