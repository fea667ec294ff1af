# Sourced by the benchmark scripts (bisect-demo.sh, bench-noise.sh): starts a scratch Arbiter of its own
# (a temporary data dir, a free port, an admin and a token), stops it on exit, and exports ARBITER_SERVER
# and ARBITER_TOKEN for `arbiter` commands. Sets: bin, data, port, token, server.
#   scratch_server NAME
scratch_server() {
  local name=$1
  scripts/setup.sh >/dev/null
  bin=target/${ARBITER_PROFILE:-debug}/arbiter
  # Always (a no-op when fresh): a stale binary would measure yesterday's code.
  if [ "${ARBITER_PROFILE:-debug}" = release ]; then cargo build --locked --release -p server --bin arbiter; else cargo build --locked -p server --bin arbiter; fi
  data=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  echo "$name: a scratch server on 127.0.0.1:$port, data in $data"
  echo "$name passphrase" | "$bin" user add "$name" --role admin --data-dir "$data" >/dev/null
  token=$("$bin" token create --user "$name" --name "$name" --data-dir "$data" | grep -o 'arb_[A-Za-z0-9_-]*' | head -1)
  ARBITER_DATA_DIR="$data" "$bin" serve --addr "127.0.0.1:$port" >"$data/server.log" 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
  for _ in $(seq 1 300); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  export ARBITER_SERVER="http://127.0.0.1:$port" ARBITER_TOKEN="$token"
}
