#!/usr/bin/env bash
# Runs the coverage-guided fuzz targets (fuzz/: libFuzzer through cargo-fuzz, on the pinned stable toolchain
# with RUSTC_BOOTSTRAP=1, no sanitizer: the code under test is safe Rust, so a panic is what is looked for).
# Each target starts from the matching test fixtures and runs for SECONDS (default 600). Never part of
# scripts/test.sh.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]      targets: stage_rows compare_csv warp_output round_files
#                                               suite_toml cron units (default: all, one after another)
#   JOBS=2 scripts/fuzz.sh 600                  two targets at a time
#
# A crash is saved under fuzz/artifacts/TARGET/ and printed; keep it as a regression test beside the parser
# (its input inline) before fixing it. Prints a line per target: runs, coverage, corpus size, crashes.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
secs=${1:-600}; shift || true
all=(stage_rows compare_csv warp_output round_files suite_toml cron units)
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz (crates.io)"
  cargo install cargo-fuzz --locked --quiet || exit 2
fi
export RUSTC_BOOTSTRAP=1
seeds() { # TARGET → fixture files to start from
  case "$1" in
    stage_rows) ls judge/tests/data/zephyr_stage_rows_* ;;
    compare_csv) ls judge/tests/data/warp/*compare*.csv judge/tests/data/warp/{equal-budget,extra-column,header-only,inconsistent-error,malformed-number,missing-evidence,old-schema,out-of-range-error,p99-regression,rounded-error,strict_gate_results}.csv ;;
    warp_output) ls judge/tests/data/warp/*.log ;;
    round_files) ls judge/tests/data/warp/driver_*.csv ;;
    suite_toml) ls suites/*.toml ;;
    cron) printf '%s\n' "0 3 * * *" "*/15 * * * 1-5" "30 2 1,15 * *" ;;
    units) printf '%s\n' "10s" "1m30s" "4KiB" "2.5GiB" "2026-12-02" "2026-12-02T10:15:00Z" "put-4KiB" "mixed-256KiB" ;;
  esac
}
cargo fuzz build --sanitizer none 2>&1 | tail -n 1
[ "${PIPESTATUS[0]}" = 0 ] || exit 2
run() {
  local t=$1 corpus=fuzz/corpus/$1 log
  mkdir -p "$corpus" "fuzz/artifacts/$t"
  case "$t" in
    cron|units) local i=0; while IFS= read -r line; do printf '%s' "$line" > "$corpus/seed-$i"; i=$((i+1)); done < <(seeds "$t") ;;
    stage_rows) for f in $(seeds "$t"); do { case "$f" in *.csv) printf '\0';; *.json) printf '\1';; *) printf '\2';; esac; cat "$f"; } > "$corpus/seed-$(basename "$f")"; done ;;
    compare_csv) for f in $(seeds "$t"); do { printf '\1'; cat "$f"; } > "$corpus/seed-$(basename "$f")"; done ;;
    *) for f in $(seeds "$t"); do cp "$f" "$corpus/seed-$(basename "$f")"; done ;;
  esac
  log=$(mktemp)
  cargo fuzz run --sanitizer none "$t" "$corpus" -- -max_total_time="$secs" -rss_limit_mb=2048 \
     -timeout=20 -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
  local rc=$?
  local runs cov crashes
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+')
  crashes=$(find "fuzz/artifacts/$t" -type f | wc -l)
  printf 'fuzz: %-12s %5ss  runs %-10s coverage %-6s corpus %-5s crashes %s  (exit %s)\n' \
    "$t" "$secs" "${runs:-?}" "${cov:-?}" "$(ls "$corpus" | wc -l)" "$crashes" "$rc"
  if [ "$rc" != 0 ]; then grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -n 20; fi
  rm -f "$log"
  return $rc
}
status=0; jobs=${JOBS:-1}
for t in "${targets[@]}"; do
  run "$t" & 
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || status=1; done
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || status=1; done
exit $status
