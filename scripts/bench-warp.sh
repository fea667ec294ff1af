#!/usr/bin/env bash
# Benchmark: the example warp suite's full 24-cell matrix through a release `arbiter serve`, printing
# gate.md and the wall time, then the built-in load driver's CPU per request against s3s-fs's.
#   scripts/bench-warp.sh [--head main|cpu-starved] [--duration 10s] [--rounds 3] [--warmup 2s] [--cooldown 2s] [--skip-matrix]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
cargo build --release --locked -p server --bin arbiter --example warp_matrix
exec target/release/examples/warp_matrix --bin target/release/arbiter "$@"
