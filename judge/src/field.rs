//! A request's bad value, named by the field it came in: what every check of a request (the launch rules,
//! a suite's fingerprint, an import's arms) returns, so that each door says it its own way — the API as
//! `field: problem` with the field in the error body's `field`, the CLI with its flag (`--treatment: …`),
//! the launch form beside the highlighted input.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// The field as the API names it: a JSON key or path (`head`, `trials`, `fingerprint.workers`,
    /// `arms[1].name`), or how a message names a nested value (`arm "low-mem" ref`).
    pub field: String,
    /// What is wrong with it, without the field's name.
    pub problem: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> FieldError {
        FieldError { field: field.into(), problem: problem.into() }
    }

    /// The CLI's words: the field as the flag that carries it (`--treatment: …`, `max_trials` as
    /// `--max-trials`; a fingerprint field `fingerprint.workers` as `--set workers`). A nested field no
    /// flag carries on its own (`arms[1].ref`) keeps the API's words.
    pub fn for_cli(&self) -> String {
        if let Some(name) = self.field.strip_prefix("fingerprint.") {
            return format!("--set {name}: {}", self.problem);
        }
        match self.field.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            true => format!("--{}: {}", self.field.replace('_', "-"), self.problem),
            false => self.to_string(),
        }
    }
}

/// The API's words: `field: problem`.
impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for FieldError {}

#[cfg(test)]
mod tests {
    use super::FieldError;

    #[test]
    fn each_door_names_the_field_its_own_way() {
        let e = FieldError::new("max_trials", "1: between 2 and 100");
        assert_eq!(e.to_string(), "max_trials: 1: between 2 and 100");
        assert_eq!(e.for_cli(), "--max-trials: 1: between 2 and 100");
        assert_eq!(FieldError::new("fingerprint.workers", "9: at most 4").for_cli(), "--set workers: 9: at most 4");
        assert_eq!(FieldError::new("arms[1].ref", "no commit").for_cli(), "arms[1].ref: no commit");
    }
}
