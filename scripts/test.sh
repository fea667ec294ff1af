#!/usr/bin/env bash
# The one command that runs every test on a fresh machine: installs what is missing, runs the Rust tests
# (unit, the store suite on SQLite and PostgreSQL, the real server), builds the site, and runs the
# Playwright tests in Debian Chromium. Ends with a line "tests: N passed, N failed".
#
# PostgreSQL: TEST_POSTGRES_URL if set; else a server answering on 127.0.0.1:5432; else the tests start a
# private cluster of their own (initdb + postgres in a temp dir).
set -uo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Each phase says how long it took ("test: setup took 241 s"), so a slow CI run shows where the time went.
# The table at the end repeats them.
phase_start=$SECONDS
timings=()
phase() {
  local took=$((SECONDS - phase_start))
  echo "test: $1 took $took s"
  timings+=("$(printf '%-22s %5d s' "$1" "$took")")
  phase_start=$SECONDS
}

scripts/setup.sh --test || exit 2
phase setup
export PATH="$HOME/.cargo/bin:$PATH"
# The build settings run.sh will use too (CI: no incremental caches), so it compiles nothing after this.
. scripts/build-env.sh

if [ -z "${TEST_POSTGRES_URL:-}" ] && command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; then
  export TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres
fi
echo "test: PostgreSQL for the store suite: ${TEST_POSTGRES_URL:-a private cluster started by the tests}"

status=0
# The house's shape: no import cycle inside a crate spans more than two files (docs/ARCHITECTURE.md).
python3 scripts/import-cycles.py --max 2 >/dev/null || status=1
# A test stuck for 15 minutes is killed with its binary's stacks printed (the slowest test takes ~90 s).
scripts/watchdog.sh "${ARBITER_TEST_STUCK_SECS:-900}" 2>&1 &
watchdog=$!
trap 'kill "$watchdog" 2>/dev/null; rm -rf "$logs"' EXIT
# Not --workspace: frontend is wasm-only (see default-members in Cargo.toml). The tests whose verdicts
# rest on measured CPU or speed (named measured_…) run after the rest, one at a time: on 2 vCPUs any
# other busy test inflates the CPU-seconds they measure.
cargo test --locked --no-run 2>&1 | tee "$logs/cargo.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
phase "compiling the tests"
# The workspace's lints ([workspace.lints] in Cargo.toml) and clippy's defaults, as errors; the default
# members (not the wasm-only frontend, a one-file entry: `cargo clippy -p frontend --target wasm32-unknown-unknown`).
cargo clippy --locked --all-targets --quiet -- -D warnings 2>&1 | tee "$logs/clippy.log"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "test: clippy found problems (above)" >&2; status=1; }
phase "clippy"
cargo test --locked --no-fail-fast -- --skip ::measured_ 2>&1 | tee -a "$logs/cargo.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
phase "the tests"
cargo test --locked --no-fail-fast -p server --test it -- ::measured_ --test-threads=1 2>&1 | tee -a "$logs/cargo.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
phase "the measured tests"
kill "$watchdog" 2>/dev/null

if scripts/build-site.sh >"$logs/build.log" 2>&1; then
  tail -n 1 "$logs/build.log"
  phase "building the site"
  scripts/e2e.sh 2>&1 | tee "$logs/e2e.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  phase "the browser tests"
else
  cat "$logs/build.log"; echo "test: the site did not build" >&2; status=1
fi

passed=$(grep -hoE '^test result: [a-zA-Z]+\. [0-9]+ passed' "$logs/cargo.log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -hoE '; [0-9]+ failed' "$logs/cargo.log" | awk '{s+=$2} END {print s+0}')
e2e_passed=$(grep -hoE '^ *[0-9]+ passed' "$logs/e2e.log" 2>/dev/null | awk '{s+=$1} END {print s+0}')
e2e_failed=$(grep -hoE '^ *[0-9]+ failed' "$logs/e2e.log" 2>/dev/null | awk '{s+=$1} END {print s+0}')
passed=$((passed + e2e_passed)); failed=$((failed + e2e_failed))
if [ "$status" != 0 ] && [ "$failed" = 0 ]; then failed=1; fi
echo "test: time by phase"
for t in "${timings[@]}"; do echo "  $t"; done
echo "  $(printf '%-22s %5d s' total "$SECONDS")"
echo "tests: $passed passed, $failed failed"
exit "$status"
