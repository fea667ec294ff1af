#!/usr/bin/env bash
# Load test: 200 concurrent readers for 30 s against a release `arbiter serve` on loopback (see README).
#   scripts/load-test.sh [--readers N] [--seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p server --bin arbiter --example load
exec target/release/examples/load --bin target/release/arbiter "$@"
