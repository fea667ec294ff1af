//! The warp judge: `baseline_compare.csv` rows (or cells built from rounds) → a gate verdict and a
//! rustfs-compatible gate.md.

pub mod adaptive;
pub mod compare_csv;
pub mod gate;
pub mod gate_md;
pub mod headline;
pub mod matrix;
pub mod noise;
pub mod rounds;
pub mod warp_output;

/// What a warp phase's load does: PUT new objects, GET prepared ones, or warp's mixed load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Put,
    Get,
    Mixed,
}

impl std::str::FromStr for Workload {
    type Err = String;
    fn from_str(text: &str) -> Result<Workload, String> {
        match text {
            "put" => Ok(Workload::Put),
            "get" => Ok(Workload::Get),
            "mixed" => Ok(Workload::Mixed),
            other => Err(format!("{other:?} is not a workload (put, get or mixed)")),
        }
    }
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Put => "put",
            Workload::Get => "get",
            Workload::Mixed => "mixed",
        }
    }
}
