#!/usr/bin/env bash
# Watches the Rust test binaries scripts/test.sh runs (target/*/deps/*). Each crate's integration tests
# are one binary that runs for many minutes, so the watch is per test, not per binary: libtest runs each
# test on a thread named after it, and a test thread older than LIMIT seconds is stuck (the slowest test
# takes about 90 s here on 2 cores). Its binary's threads' stacks are printed (gdb, when installed) and
# the binary is killed with everything it started. The run then fails in that one binary with a trace,
# instead of sitting until CI's limit with no word of where it hung.
#
# usage: scripts/watchdog.sh [LIMIT]   (default 900; runs until killed)
set -u
cd "$(dirname "$0")/.."
limit=${1:-900}
deps="$PWD/target/"
tick=$(getconf CLK_TCK)
names=$(mktemp -d)
trap 'rm -rf "$names"' EXIT

descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    descendants "$child"
    echo "$child"
  done
}

# The thread names a test binary gives its tests: the test names cut to the kernel's 15 bytes.
test_threads() {
  local exe=$1 key
  key="$names/$(echo "$exe" | md5sum | cut -c1-16)"
  [ -f "$key" ] || "$exe" --list --format terse 2>/dev/null | sed -n 's/: test$//p' | cut -c1-15 | sort -u >"$key"
  echo "$key"
}

while sleep ${WATCHDOG_POLL:-20}; do
  uptime_s=$(cut -d' ' -f1 /proc/uptime)
  ps -eo pid=,args= | while read -r pid exe _; do
    case "$exe" in "$deps"*/deps/*) ;; *) continue ;; esac
    list=$(test_threads "$exe")
    stuck=""
    for task in /proc/"$pid"/task/*; do
      tid=${task##*/}
      [ "$tid" != "$pid" ] || continue
      comm=$(cat "$task/comm" 2>/dev/null) || continue
      grep -qxF -- "$comm" "$list" || continue
      # Field 22 of stat is the thread's start, in ticks since boot (the name, field 2, may hold spaces).
      start=$(sed 's/.*) //' "$task/stat" 2>/dev/null | cut -d' ' -f20) || continue
      age=$(awk -v u="$uptime_s" -v s="$start" -v t="$tick" 'BEGIN { printf "%d", u - s / t }')
      if [ "$age" -gt "$limit" ]; then stuck="$comm (${age}s)"; break; fi
    done
    [ -n "$stuck" ] || continue
    echo "watchdog: in ${exe##*/} (pid $pid) the test $stuck has run over the ${limit}s limit: it is stuck" >&2
    if command -v gdb >/dev/null; then
      echo "watchdog: the binary's threads' stacks:" >&2
      timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt 40" 2>/dev/null \
        | grep -E '^(Thread|#)' | head -n 600 >&2
    fi
    kids=$(descendants "$pid")
    kill -9 "$pid" $kids 2>/dev/null
    echo "watchdog: killed ${exe##*/} and the $(echo $kids | wc -w) processes it started" >&2
  done
done
