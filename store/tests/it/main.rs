//! The store crate's integration tests, linked into one binary (one module a file).

#[macro_use]
mod common;
mod history;
mod migrations_in_step;
mod refusals;
mod store_suite;
