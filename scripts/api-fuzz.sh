#!/usr/bin/env bash
# schemathesis (PyPI) against the running API: a fresh Arbiter on SQLite, seeded with the demo experiments
# and the example suites, is sent generated requests for every operation of /api/v1/openapi.json — once
# with a launcher's API token, once with an admin's (users, suites, the audit log). Checks: no 500, and
# every response's status, content type and body match the document. Never part of scripts/test.sh.
#
#   scripts/api-fuzz.sh [EXAMPLES_PER_OPERATION]     (default 100; a report lands in target/api-fuzz/)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
examples=${1:-100}
venv=.venv-api-fuzz
if [ ! -x "$venv/bin/schemathesis" ] || [ "$("$venv/bin/schemathesis" --version 2>/dev/null | awk '{print $NF}')" != 4.32.5 ]; then
  echo "api-fuzz: installing schemathesis 4.32.5 into $venv"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q "schemathesis==4.32.5"
fi
cargo build --locked -q -p server --bin arbiter
bin=target/debug/arbiter
work=$(mktemp -d); out=target/api-fuzz; mkdir -p "$out"
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
data=$work/data
printf 'correct horse battery staple\n' | "$bin" user add fuzzer --role launcher --data-dir "$data" >/dev/null
printf 'correct horse battery staple\n' | "$bin" user add fuzz-admin --role admin --data-dir "$data" >/dev/null
launcher_token=$("$bin" token create --user fuzzer --name schemathesis --data-dir "$data")
admin_token=$("$bin" token create --user fuzz-admin --name schemathesis --role admin --data-dir "$data")
ARBITER_BIN=$bin scripts/demo-data.sh "$data" --by fuzzer >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --addr "127.0.0.1:$port" --data-dir "$data" --suites-dir suites --finelog-url http://127.0.0.1:9 \
  >"$out/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
set +e
status=0
for role in launcher admin; do
  token=$launcher_token; [ "$role" = admin ] && token=$admin_token
  echo "api-fuzz: as $role"
  "$venv/bin/schemathesis" run "http://127.0.0.1:$port/api/v1/openapi.json" \
    --header "Authorization: Bearer $token" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-examples "$examples" --workers 1 --seed 20261202 --request-timeout 30 \
    --report junit --report-dir "$out/$role" 2>&1 | tee "$out/schemathesis-$role.log" | grep -vE '^\s*$' | tail -n 25
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  grep -hE '^\s+[0-9]+ generated' "$out/schemathesis-$role.log" | sed "s/^ */api-fuzz: $role: /"
done
echo "api-fuzz: the server's log is $out/serve.log; ERROR lines in it: $(grep -c ' ERROR ' "$out/serve.log" || true)"
exit "$status"
