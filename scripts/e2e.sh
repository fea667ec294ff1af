#!/usr/bin/env bash
# Browser tests: starts the built server on a free port with a throwaway data dir, runs Playwright in
# Debian Chromium against it, and stops the server. Expects scripts/build-site.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${ARBITER_PROFILE:-debug}
bin=target/$profile/arbiter
[ -x "$bin" ] && [ -f target/site/pkg/arbiter.wasm ] || { echo "e2e: run scripts/build-site.sh first" >&2; exit 2; }

data=$(mktemp -d)
# Two accounts for the browser tests, made with the real CLI (the password arrives on stdin).
export E2E_PASSWORD="e2e passphrase $(date +%s)"
for user in e2e-admin:admin e2e-viewer:viewer; do
  echo "$E2E_PASSWORD" | "$bin" user add "${user%%:*}" --role "${user##*:}" --data-dir "$data" >/dev/null
done
# Real judged experiments (imported from upstream outputs by the real CLI), 52 fillers for paging.
ARBITER_BIN="$bin" scripts/demo-data.sh "$data" --by e2e-admin --many 52 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --addr "127.0.0.1:$port" --data-dir "$data" --site-root target/site >"$data/server.log" 2>&1 &
server=$!
# The tests' status is the script's: removing the data dir must not replace it (a finelog server the
# server started may still be flushing into it for a moment: seen once as "Directory not empty").
cleanup() {
  local status=$?
  kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true
  # What serve mounted for trials still running when it stopped (a sized scratch, a capped worktree):
  # off first, deepest first, or rm cannot remove their folders.
  if [ "$(id -u)" = 0 ]; then
    awk -v d="$data/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  rm -rf "$data" 2>/dev/null || { sleep 2; rm -rf "$data" || echo "e2e: could not remove $data" >&2; }
  exit "$status"
}
trap cleanup EXIT

for _ in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$data/server.log"; echo "e2e: the server exited" >&2; exit 1; }
  sleep 0.1
done
# The setup-link test starts a server of its own (no users) with the same binary.
export ARBITER_BIN="$PWD/$bin"
cd end2end
BASE_URL="http://127.0.0.1:$port" npx playwright test "$@" || { echo "--- server log"; cat "$data/server.log"; exit 1; }
