//! The engine's own integration tests: a `TestEngine` on a real store (SQLite) and a real git repository,
//! driven through the engine's functions — no HTTP. What the server's tests reach through the API they
//! can reach here directly (one binary, a module a file).

mod common;
mod launch;
