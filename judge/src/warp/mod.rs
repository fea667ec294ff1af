//! The warp judge: `baseline_compare.csv` rows (or cells built from rounds) → a gate verdict and a
//! rustfs-compatible gate.md.

pub mod compare_csv;
pub mod gate;
pub mod gate_md;
pub mod matrix;
pub mod rounds;
pub mod warp_output;
