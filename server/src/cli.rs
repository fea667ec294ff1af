//! The command line. Every flag of `serve` can also come from the environment.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "arbiter", version, about = "Launch and judge A/B performance experiments")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web app and API.
    Serve(ServeArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "ARBITER_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    /// Database URL: sqlite://PATH or postgres://USER@HOST:PORT/DB. Default: SQLite in the data dir.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Where Arbiter keeps its SQLite database, logs and artifacts.
    #[arg(long, env = "ARBITER_DATA_DIR", default_value = ".arbiter")]
    pub data_dir: PathBuf,

    /// The built site (pkg/arbiter.js, pkg/arbiter.wasm, pkg/arbiter.css, favicon): scripts/build-site.sh output.
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
}
