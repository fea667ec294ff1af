//! One module per route family.

pub mod account;
pub mod admin;
pub mod bisection;
pub mod experiment;
pub mod history;
pub mod import;
pub mod launch;
pub mod login;
pub mod not_found;
pub mod suites;
pub mod trends;
