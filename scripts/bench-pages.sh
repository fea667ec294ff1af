#!/usr/bin/env bash
# Benchmark: page rendering through a release `arbiter serve` (50-stage pipeline page, 24-cell warp
# page, history over 100 000 experiments), then the release WASM bundle's size, raw and gzipped.
#   scripts/bench-pages.sh [--requests 200] [--experiments 100000]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build-site.sh --release >/dev/null
cargo build --release --locked -p server --example bench_pages
target/release/examples/bench_pages --bin target/release/arbiter "$@"
wasm=target/site/pkg/arbiter.wasm
echo "release WASM: $(stat -c %s "$wasm") bytes raw, $(gzip -9 -c "$wasm" | wc -c) bytes gzip -9, $(gzip -c "$wasm" | wc -c) bytes gzip -6"
