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
scripts/setup.sh >/dev/null
bin=target/${ARBITER_PROFILE:-debug}/arbiter
[ -x "$bin" ] || cargo build --locked -p server --bin arbiter
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "bisect-demo: a scratch server on 127.0.0.1:$port, data in $data"
echo "bisect-demo passphrase" | "$bin" user add demo --role admin --data-dir "$data" >/dev/null
token=$("$bin" token create --user demo --name demo --data-dir "$data" | grep -o 'arb_[A-Za-z0-9_-]*' | head -1)
ARBITER_DATA_DIR="$data" "$bin" serve --addr "127.0.0.1:$port" >"$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
export ARBITER_SERVER="http://127.0.0.1:$port" ARBITER_TOKEN="$token"

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
