//! The server crate's integration tests, linked into one binary (one module a file).

mod accounts_cli;
mod authz_matrix;
mod bisect;
mod common;
mod compare_cli;
mod doors;
mod finelog;
mod gate_cli;
mod imports;
mod launch_adaptive;
mod launch_crash;
mod launch_plan;
mod launch_run;
mod launch_slurm;
mod launch_warp;
mod launch_zephyr;
mod metrics;
mod openapi;
mod pages;
mod retention;
mod sandbox;
mod schedules;
mod security;
mod serve;
mod suites;
mod trends;
