//! Launching experiments: resolving a request into a plan (refs to SHAs, fingerprint, locality,
//! trial order, argv). The runners that execute a plan build on this.

pub mod cluster;
pub mod conclude;
pub mod finelog;
pub mod git;
pub mod owned_finelog;
pub mod plan;
pub mod request;
pub mod reuse;
pub mod runner;
pub mod scheduler;
pub mod submit;
pub mod supervise;
pub mod warp;
