# Sourced by every script that builds (test.sh, build-site.sh and so run.sh): the build settings they
# share, so one never recompiles what another built. CI builds once, without incremental caches
# (CARGO_INCREMENTAL=0; they reached 23 GB in a long-lived work tree here). Whatever a build used is
# recorded in target/build-env, and a later build that is not told otherwise uses it again: scripts/run.sh
# after a `.ci/run` (CI=true) compiles nothing, though its shell has no CI variable.
record=target/build-env
if [ -z "${CARGO_INCREMENTAL+x}" ]; then
  if [ "${CI:-}" = true ]; then
    export CARGO_INCREMENTAL=0
  elif [ -f "$record" ] && grep -qx 'CARGO_INCREMENTAL=0' "$record"; then
    export CARGO_INCREMENTAL=0
  fi
fi
mkdir -p target
if [ "${CARGO_INCREMENTAL:-}" = 0 ]; then echo CARGO_INCREMENTAL=0 >"$record"; else echo "CARGO_INCREMENTAL=default" >"$record"; fi
