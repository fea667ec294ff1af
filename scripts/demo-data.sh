#!/usr/bin/env bash
# Fills a data dir with judged experiments imported from real upstream outputs (the rows and gate inputs
# in judge/tests/data), through the real `arbiter import` command: a pipeline regression on real
# zephyr.stage rows (and the same one as judged by method 1), an A/A pipeline pass, a warp FAIL across four cells with a MISSING one, a warp PASS,
# and, with --many N, N more warp experiments (for paging through the history, filed under the example
# warp suite so that its trend has a series).
#   scripts/demo-data.sh DATA_DIR [--by USER] [--many N]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: scripts/demo-data.sh DATA_DIR [--by USER] [--many N]}; shift
by=(); many=0
while [ $# -gt 0 ]; do
  case "$1" in
    --by) by=(--by "$2"); shift 2 ;;
    --many) many=$2; shift 2 ;;
    *) echo "demo-data: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=${ARBITER_BIN:-target/${ARBITER_PROFILE:-debug}/arbiter}
d=judge/tests/data
w=$d/warp
rows=$d/zephyr_stage_rows_subprocess_runner.csv
import() { "$bin" import "$@" --data-dir "$data" >/dev/null; }

# The fillers are filed under the example warp suite, so its trend has a series to draw (one point a
# night over the last N nights, `--measured-at`): its control
# level holds for the first half, then steps (the second half's gate inputs measured another baseline),
# so the trend has a change point to mark.
for i in $(seq 1 "$many"); do
  if [ "$i" -le $((many / 2)) ]; then
    if [ $((i % 2)) -eq 0 ]; then input=$w/compare_warn.csv; else input=$w/driver_cand_baseline_compare.csv; fi
  else
    input=$w/compare_pass.csv
  fi
  # One a night, the newest last night, dated when they were measured.
  night=$(date -u -d "@$(( $(date -u +%s) / 86400 * 86400 - (many - i + 1) * 86400 + 3 * 3600 ))" +%Y-%m-%dT%H:%M:%SZ)
  import warp --title "put-4KiB nightly $i" --label "put-4KiB/sync-on=$input" --control-ref main --treatment-ref "nightly-$i" \
    --suite s3s-fs-warp --measured-at "$night"
done
import pipeline --title "Dedup A/A (same code)" --rows "$rows" \
  --control 20261129-072203-da99fe05 --control 20261129-072217-adb9e3d8 --treatment 20261129-072231-4eb27101 \
  --control-ref main --treatment-ref main --suite zephyr-pipeline "${by[@]}"
import warp --title "s3 hot path: fsync batching" --label "put-4KiB/sync-on=$w/compare_pass.csv" \
  --label "get-4MiB/sync-off=$w/compare_warn.csv" --control-ref main --treatment-ref fsync-batching "${by[@]}"
import warp --title "s3 hot path: smaller write buffer" \
  --label "put-4KiB/sync-on=$w/driver_cand_baseline_compare.csv" --label "put-4KiB/sync-off=$w/compare_fail.csv" \
  --label "get-4MiB/sync-on=$w/compare_warn.csv" --label "mixed-256KiB/sync-on=$w/compare_missing_baseline.csv" \
  --control-ref main --treatment-ref small-buffer --treatment-sha 4b825dc642cb6eb9a060e54bf8d69288fbee4904 "${by[@]}"
# The same comparison as the next, kept as judged by method 1 (the report of the judge before margins and
# error control): its page says so and offers re-judging.
import pipeline --title "Dedup: MinHash v1 (judged by an older method)" --rows "$rows" \
  --control 20261129-072203-da99fe05 --control 20261129-072217-adb9e3d8 --control 20261129-072231-4eb27101 \
  --treatment heavier-minhash=20261129-072244-a8070574 --worker-ram 64MiB --judged-report "$d/report_method1_heavier_minhash.json" \
  --control-ref main --treatment-ref minhash-v1 --suite zephyr-pipeline "${by[@]}"
# One treatment trial measures no spread of its own, and the judge borrows none (method 3): a regression
# from it needs a noise profile. These rows hold no other same-code trials, so the three controls stand in
# for the suite's calibration (a real suite calibrates from runs of their own: `trials`, "calibration").
noise=$(mktemp); trap 'rm -f "$noise"' EXIT
"$bin" calibrate --rows "$rows" --trial 20261129-072203-da99fe05 --trial 20261129-072217-adb9e3d8 \
  --trial 20261129-072231-4eb27101 --output "$noise"
import pipeline --title "Dedup: heavier MinHash" --rows "$rows" \
  --control 20261129-072203-da99fe05 --control 20261129-072217-adb9e3d8 --control 20261129-072231-4eb27101 \
  --treatment heavier-minhash=20261129-072244-a8070574 --worker-ram 64MiB --noise "$noise" \
  --control-ref main --treatment-ref cpu-heavier --treatment-sha 8f3a9c2e1d0b4a5f6e7d8c9b0a1f2e3d4c5b6a79 --suite zephyr-pipeline "${by[@]}"
echo "demo-data: imported $((many + 5)) experiments into $data"
