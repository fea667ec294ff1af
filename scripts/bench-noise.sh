#!/usr/bin/env bash
# Real same-code A/As of the example Zephyr suite under two trial protocols, with their figures:
#   old   every pair control first, no warm-up, the shared CPUs  (--order control_first --warm-up 0 --shared-cpus)
#   new   balanced order, one warm-up trial first, a CPU reserved for each trial where the host has one to
#         spare, Arbiter and finelog kept off it                 (the defaults)
# For each protocol it launches RUNS experiments of main against main (PAIRS pairs each, or trials = auto
# with AUTO=1), on SAMPLE with WORKERS workers, on a scratch Arbiter (its own data dir and port), and prints
# (scripts/noise-figures.py, from the scratch store): each stage's per-trial CPU CV, the order effect, the
# first-trial effect, how many experiments claimed a change, and pairs used (auto).
#   scripts/bench-noise.sh [old] [new]        (default: both)
#   RUNS=2 PAIRS=8 SAMPLE=local/small WORKERS=1 AUTO=0 MAX_TRIALS=20  (the defaults)
# One worker by default: the example suite asks 2 CPUs, capped at its workers, so with one worker a 2-CPU
# host has one to reserve and the isolation's effect is measured (with WORKERS=2 nothing can be reserved
# here, and the trial facts say so). Minutes of real trials (local/small: about 5–10 s a trial here); keep
# the machine otherwise quiet. Not part of the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
protocols=("$@")
[ ${#protocols[@]} -gt 0 ] || protocols=(old new)
RUNS=${RUNS:-2} PAIRS=${PAIRS:-8} SAMPLE=${SAMPLE:-local/small} WORKERS=${WORKERS:-1} AUTO=${AUTO:-0} MAX_TRIALS=${MAX_TRIALS:-20}
. scripts/lib/scratch-server.sh
scratch_server bench-noise
echo "bench-noise: $RUNS runs of $([ "$AUTO" = 1 ] && echo "auto (≤ $MAX_TRIALS pairs)" || echo "$PAIRS pairs") on $SAMPLE, $WORKERS workers"

trials=$PAIRS
[ "$AUTO" = 1 ] && trials="auto --max-trials $MAX_TRIALS"
ids=$(mktemp)
# The protocols alternate run by run, so that a drift of the host over the bench is shared by both.
for run in $(seq 1 "$RUNS"); do
  for protocol in "${protocols[@]}"; do
    case "$protocol" in
      old) flags=(--order control_first --warm-up 0 --shared-cpus) ;;
      new) flags=() ;;
      *) echo "bench-noise: unknown protocol $protocol (old, new)" >&2; exit 2 ;;
    esac
    started=$SECONDS
    # shellcheck disable=SC2086
    out=$("$bin" launch --suite zephyr-pipeline --control-ref main --treatment-ref main --trials $trials \
      --set "sample=$SAMPLE" --set "workers=$WORKERS" "${flags[@]}" --wait 2>&1) || true
    id=$(printf '%s\n' "$out" | sed -n 's/^launched experiment \([0-9]*\):.*/\1/p' | head -1)
    [ -n "$id" ] || { printf '%s\n' "$out" >&2; echo "bench-noise: the launch failed" >&2; exit 1; }
    echo "$protocol $id" >>"$ids"
    echo "  $protocol run $run: experiment #$id, $(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-100) ($((SECONDS - started)) s)"
  done
done
python3 scripts/noise-figures.py "$data/arbiter.db" <"$ids"
