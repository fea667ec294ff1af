//! Warp experiments: the phase plan, the server binary (built and cached by SHA, or prebuilt), one
//! phase's run (local server or external endpoint + deploy hook, then the load rounds) and the verdict
//! from the stored rounds through the matrix judge; adaptive rounds add phases for cells still unsure.

pub(crate) mod adaptive;
pub mod binary;
mod external;
mod local;
pub mod phase;
pub mod plan;
mod rounds;
pub mod run;
pub mod verdict;
pub mod warp_tool;
