#!/usr/bin/env bash
# A real bisection, end to end, with its figures: a scratch Arbiter (its own data dir and port) on the
# example suites, and `arbiter bisect --wait` over
#   zephyr   the example Zephyr repository's bisect-range branch (8 commits; only the 5th, 29 MinHash
#            permutations instead of 24, adds ~20 % CPU to stage3-Map → Write)
#   warp     the example S3 server's bisect-sync branch (4 commits; only the 3rd slows the server when
#            drive sync is on), on the put-4MiB/sync-on cell's obj/s, with short phases
#   flat     the Zephyr repository's bisect-flat branch (3 commits that change nothing measurable)
# Prints each step as it ends, the culprit, and the steps, trials and wall time (from the API).
#   scripts/bisect-demo.sh [zephyr|warp|flat]...      (default: zephyr)
# Tens of minutes of real trials each (a Zephyr step: pairs of ~4 s tiny trials, up to MAX_TRIALS=100 an arm: on a 2-core
# VM the tiny sample's stage CPU spreads 15–25 % from trial to trial); keep the machine otherwise quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(zephyr)
. scripts/lib/scratch-server.sh
scratch_server bisect-demo

run() { # LABEL ARGS...
  local label=$1; shift
  echo "== $label"
  local started=$SECONDS status=0
  "$bin" bisect "$@" --dry-run
  "$bin" bisect "$@" --wait || status=$?
  local id
  id=$(curl -fsS -H "Authorization: Bearer $token" "$ARBITER_SERVER/api/v1/bisections?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
  curl -fsS -H "Authorization: Bearer $token" "$ARBITER_SERVER/api/v1/bisections/$id" | python3 scripts/bisect-figures.py
  echo "exit $status after $((SECONDS - started)) s"
}

for kind in "${kinds[@]}"; do
  case "$kind" in
    zephyr) run "zephyr: main..bisect-range, CPU of stage3-Map → Write" --suite zephyr-pipeline --good main --bad bisect-range \
              --metric "cpu:stage3-Map → Write" --max-trials "${MAX_TRIALS:-100}" ;;
    flat) run "zephyr: main..bisect-flat (nothing changed)" --suite zephyr-pipeline --good main --bad bisect-flat \
              --metric "cpu:stage3-Map → Write" --max-trials "${MAX_TRIALS:-100}" --margin 10 ;;
    warp) run "warp: main..bisect-sync, obj/s of put-4MiB/sync-on" --suite s3s-fs-warp --good main --bad bisect-sync \
              --metric "put-4MiB/sync-on:reqps" \
              --rounds 2 --duration 3s --warmup 1s --cooldown 0s ;;
    *) echo "bisect-demo: unknown kind $kind (zephyr, warp, flat)" >&2; exit 2 ;;
  esac
done
