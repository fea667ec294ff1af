//! One module per route family.

pub mod history;
pub mod launch;
pub mod not_found;
pub mod trends;
