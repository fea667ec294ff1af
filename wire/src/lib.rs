//! The JSON that crosses Arbiter's HTTP API, defined once: the server's handlers read it, the CLI client
//! and the browser's islands write it. Like `bencher_json`: types only, no behaviour beyond serde.

pub mod answers;
pub mod bisection;
pub mod error;
pub mod experiment;
pub mod history;
pub mod import;
pub mod launch;
pub mod plan;
pub mod progress;
pub mod share;
