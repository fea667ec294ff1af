//! The body of every refused API request (`{"error": "…"}`), typed for the server that writes it and the
//! CLI and the browser that read it. A refusal of one value also names its field, so each door can say
//! it its own way (the form beside the input, the CLI with its flag).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JsonError {
    /// What went wrong, in words a user can act on (`field: problem` for a bad value).
    pub error: String,
    /// The request's field at fault, as the API names it (`head`, `trials`, `fingerprint.workers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// With `field`: the problem without the field's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl JsonError {
    /// A refusal that blames no one field.
    pub fn message(error: impl Into<String>) -> JsonError {
        JsonError { error: error.into(), field: None, problem: None }
    }

    /// The field's error back, when the refusal named one.
    pub fn field_error(&self) -> Option<judge::FieldError> {
        Some(judge::FieldError::new(self.field.clone()?, self.problem.clone()?))
    }
}
