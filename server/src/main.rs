//! `arbiter`: the Arbiter server and command-line tool.

use clap::Parser;
use server::{auth, cli, compare, gate, retention, serve};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Everything Arbiter writes (the database, logs, reports, worktrees, sockets) is its user's alone;
    // what another user must reach (finelog's store, a trial's folder) is given to that user explicitly.
    // SAFETY: umask(2) only sets this process's file-creation mask.
    unsafe {
        libc::umask(0o077);
    }
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Serve(args) => {
            init_tracing();
            let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return fail(format!("cannot start the async runtime: {e}")),
            };
            match runtime.block_on(serve::run(args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e.to_string()),
            }
        }
        cli::Command::Compare(args) => exit_with(compare::run_compare(args)),
        cli::Command::Calibrate(args) => exit_with(compare::run_calibrate(args)),
        cli::Command::Simulate(args) => exit_with(server::simulate::run_simulate(args)),
        cli::Command::Gate(args) => exit_with(gate::run_gate(args)),
        cli::Command::WarpCompare(args) => exit_with(gate::run_warp_compare(args)),
        cli::Command::WarpParse(args) => exit_with(gate::run_warp_parse(args)),
        cli::Command::Load(args) => exit_with(loadgen::command::run_load(args)),
        cli::Command::Launch(args) => exit_with(server::client::run_launch(args)),
        cli::Command::Bisect(args) => exit_with(server::bisect_client::run_bisect(args)),
        cli::Command::Import(cli::ImportCommand::Pipeline(args)) => exit_with(block_on(server::import::run_pipeline(*args))),
        cli::Command::Import(cli::ImportCommand::Warp(args)) => exit_with(block_on(server::import::run_warp(*args))),
        cli::Command::User(cli::UserCommand::Add(args)) => exit_with(block_on(auth::users::add_user(args))),
        cli::Command::Token(cli::TokenCommand::Create(args)) => exit_with(block_on(auth::users::create_token(args))),
        cli::Command::Token(cli::TokenCommand::List(args)) => exit_with(block_on(auth::users::list_tokens(args))),
        cli::Command::Token(cli::TokenCommand::Revoke(args)) => exit_with(block_on(auth::users::revoke_token(args))),
        cli::Command::Rejudge(args) => exit_with(block_on(server::rejudge::run(args))),
        cli::Command::Prune(args) => exit_with(block_on(retention::run(args))),
        cli::Command::Supervise(args) => exit_with(engine::queue::supervise::run(args)),
        cli::Command::FinelogServe(args) => exit_with(engine::queue::owned_finelog::host(args)),
        cli::Command::FinelogInner(args) => exit_with(engine::queue::owned_finelog::inner(args)),
        cli::Command::SandboxRelay(args) => {
            let relay = args.port.zip(args.socket.as_deref());
            exit_with(engine::queue::sandbox::relay_inside(relay, args.user.as_deref(), &args.argv))
        }
        cli::Command::SandboxEnter(args) => exit_with(engine::queue::sandbox::enter(args.pid, args.health.as_deref(), &args.argv)),
    }
}

/// Runs a one-shot async command on a small runtime.
fn block_on(fut: impl std::future::Future<Output = Result<i32, String>>) -> Result<i32, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?
        .block_on(fut)
}

fn exit_with(result: Result<i32, String>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(message) => fail(message),
    }
}

/// Bad input and start-up failures end with one line naming the problem, and exit code 2.
fn fail(message: String) -> ExitCode {
    eprintln!("arbiter: error: {message}");
    ExitCode::from(judge::ExitCode::Usage.code() as u8)
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("ARBITER_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_sessions=warn"));
    // Colour only for a person at a terminal: a log file or a journal gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(ansi).init();
}
