#!/usr/bin/env bash
# The one command that runs Arbiter on a fresh machine: installs what is missing, builds, and serves
# http://127.0.0.1:3000 with an embedded SQLite database in .arbiter/ (ARBITER_DATA_DIR).
#   scripts/run.sh [--release] [any `arbiter serve` flags, e.g. --addr 127.0.0.1:8080]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=debug
if [ "${1:-}" = "--release" ]; then profile=release; shift; fi
scripts/setup.sh
if [ "$profile" = release ]; then scripts/build-site.sh --release; else scripts/build-site.sh; fi
exec "target/$profile/arbiter" serve --site-root target/site "$@"
