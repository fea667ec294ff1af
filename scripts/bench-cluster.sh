#!/usr/bin/env bash
# Benchmark: how much a cluster's parallel slots buy. One 2 arms x 8 trials experiment of a sleep-bound
# job on the tests' real single-node Slurm (the node declared with 8 CPUs), at max_parallel 1, 2, 4, 8;
# prints the wall time of each and its ratio to the serial (max_parallel 1) time. About 5 minutes.
#   scripts/bench-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test >/dev/null
export PATH="$HOME/.cargo/bin:$PATH"
cargo test --locked -p server --test it -- --ignored --exact launch_slurm::bench_cluster_parallelism --nocapture 2>&1 \
  | grep -E '^bench:|test result|panicked'
