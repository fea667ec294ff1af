#!/usr/bin/env bash
# Watches the Rust test binaries scripts/test.sh runs (target/*/deps/*). One that has run longer than
# LIMIT seconds is stuck — the slowest binary takes about 90 s here on 2 cores — so its threads' stacks
# are printed (gdb, when installed) and it is killed with everything it started. The run then fails in
# that one binary with a trace, instead of sitting until CI's limit with no word of where it hung.
#
# usage: scripts/watchdog.sh [LIMIT]   (default 900; runs until killed)
set -u
cd "$(dirname "$0")/.."
limit=${1:-900}
deps="$PWD/target/"

descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    descendants "$child"
    echo "$child"
  done
}

while sleep ${WATCHDOG_POLL:-20}; do
  ps -eo pid=,etimes=,args= | while read -r pid secs exe _; do
    case "$exe" in "$deps"*/deps/*) ;; *) continue ;; esac
    [ "$secs" -gt "$limit" ] || continue
    echo "watchdog: ${exe##*/} (pid $pid) has run ${secs}s, over the ${limit}s limit: it is stuck" >&2
    if command -v gdb >/dev/null; then
      echo "watchdog: its threads' stacks:" >&2
      timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt 40" 2>/dev/null \
        | grep -E '^(Thread|#)' | head -n 600 >&2
    fi
    kids=$(descendants "$pid")
    kill -9 "$pid" $kids 2>/dev/null
    echo "watchdog: killed ${exe##*/} and the $(echo $kids | wc -w) processes it started" >&2
  done
done
