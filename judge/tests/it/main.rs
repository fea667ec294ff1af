//! The judge crate's integration tests, linked into one binary (one module a file).

mod pipeline_decision_table;
mod pipeline_real_rows;
mod pipeline_sequential;
mod warp_gate_boundaries;
mod warp_gate_upstream;
mod warp_rounds_and_parsers;
