#!/usr/bin/env bash
# Installs what Arbiter needs that is missing, and checks the versions of what is already there.
# Used by scripts/run.sh and scripts/test.sh; safe to run again (a warm run takes a few seconds).
#
#   scripts/setup.sh            what `run` needs: wasm32 target, wasm-bindgen-cli (= Cargo.lock), npm packages,
#                               Debian's bubblewrap (the trial sandbox), .venv (Python 3.11 with Zephyr and
#                               finelog), s3s-fs 0.14.1 (the warp example's S3 server, from crates.io) and the
#                               example suites' repositories
#   scripts/setup.sh --test     also Debian chromium, slurm-wlm (a private Slurm for the cluster launcher's tests) and
#                               PostgreSQL's initdb (for tests without TEST_POSTGRES_URL)
#   scripts/setup.sh --dev      also cargo-leptos 0.3.10 for `cargo leptos watch` (a 14-minute build, so opt-in)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0; want_dev=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    --dev) want_dev=1 ;;
    *) echo "setup: unknown option $arg (use --test or --dev)" >&2; exit 2 ;;
  esac
done

say() { printf 'setup: %s\n' "$*"; }
export PATH="$HOME/.cargo/bin:$PATH"

apt_updated=0
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    echo "setup: $* missing and not root; install it with: sudo apt-get install -y $*" >&2; exit 2
  fi
  [ "$apt_updated" = 1 ] || { DEBIAN_FRONTEND=noninteractive apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust 1.95 with rustup" >&2; exit 2; }

# The lints the test command runs.
if ! cargo clippy --version >/dev/null 2>&1; then
  say "adding clippy"
  rustup component add clippy
fi

# The browser bundle's target.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen-cli must equal the wasm-bindgen library in Cargo.lock, or it refuses the wasm.
wb_version=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$wb_version" ]; then
  say "installing wasm-bindgen-cli $wb_version (found: ${have:-none}); about 2 minutes"
  # Not --locked: its lock file names a webpki-roots the registry here lacks.
  cargo install wasm-bindgen-cli --version "$wb_version" --quiet
fi

# The sandbox local trials run in (engine/src/queue/sandbox.rs): without it, serve refuses local
# pipeline launches unless an admin passes --unsandboxed-trials.
if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    say "installing Debian bubblewrap (the trial sandbox)"
    apt_install bubblewrap
  else
    say "bubblewrap (bwrap) is missing: local pipeline trials need it (sudo apt-get install -y bubblewrap)"
  fi
fi

# The unprivileged host users `serve` (as root) runs branches' trials and its own finelog server as
# (engine/src/queue/host_user.rs; serve also creates them if missing).
if [ "$(id -u)" = 0 ]; then
  for user in arbiter-trial arbiter-finelog; do
    if ! id "$user" >/dev/null 2>&1; then
      say "creating the system user $user"
      useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
    fi
  done
fi

# npm packages: Playwright for the browser tests, binaryen's wasm-opt for release bundles (never Debian's
# binaryen 108, whose output does not hydrate).
if ! command -v npm >/dev/null; then
  say "installing nodejs and npm"
  apt_install nodejs npm
fi
if [ ! -x end2end/node_modules/.bin/wasm-opt ] || [ ! -d end2end/node_modules/@playwright/test ] \
   || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
  say "installing end2end npm packages"
  (cd end2end && npm ci --no-audit --no-fund --loglevel=error)
fi

if [ "$want_test" = 1 ]; then
  if [ ! -x /usr/bin/chromium ]; then
    say "installing Debian chromium"
    apt_install chromium
  fi
  # Verdict icons are emoji; without a colour emoji font the screenshots the browser tests save show boxes.
  if [ ! -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ]; then
    say "installing Debian fonts-noto-color-emoji (for the browser tests' screenshots)"
    apt_install fonts-noto-color-emoji
  fi
  if [ ! -x /usr/sbin/slurmctld ] || ! command -v munged >/dev/null; then
    say "installing Debian slurm-wlm (the cluster launcher's tests start a private single-node Slurm)"
    apt_install slurm-wlm
  fi
  if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    say "installing postgresql (tests start a private cluster when TEST_POSTGRES_URL is unset)"
    apt_install postgresql
  fi
fi

# .venv: Python 3.11 with Zephyr and finelog pinned (PyPI). Arbiter runs its own finelog server with it
# and the example suite's pipeline (examples/zephyr-pipeline) runs on it; the launch tests use both.
PY_PINS="marin-zephyr==0.2.20.dev202606180959 marin-finelog==0.2.10 marin-finelog-server==0.2.10"
venv_ok() {
  [ -x .venv/bin/python ] && .venv/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null
}
pins_ok() {
  .venv/bin/python - $PY_PINS <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
assert all(version(name) == wanted for name, wanted in (pin.split("==") for pin in sys.argv[1:]))
PY
}
if ! venv_ok; then
  py=""
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
      py=$(command -v "$candidate"); break
    fi
  done
  if [ -z "$py" ]; then
    say "installing Debian python3.11"
    apt_install python3.11 python3.11-venv
    py=/usr/bin/python3.11
  fi
  "$py" -c 'import venv, ensurepip' 2>/dev/null || apt_install python3.11-venv
  say "creating .venv (Python $("$py" -c 'import platform; print(platform.python_version())'))"
  rm -rf .venv
  "$py" -m venv .venv
fi
if ! pins_ok; then
  say "installing $PY_PINS into .venv (about 2 minutes the first time)"
  .venv/bin/pip install --quiet --disable-pip-version-check $PY_PINS
fi

# s3s-fs 0.14.1, the S3 server the warp example suite and its tests run (newer versions need a newer Rust).
s3s_fs="${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs"
if ! "$s3s_fs" --version 2>/dev/null | grep -qx "s3s-fs 0.14.1"; then
  say "installing s3s-fs 0.14.1 from crates.io (about 3 minutes the first time)"
  cargo install s3s-fs --version 0.14.1 --features binary --locked --quiet
fi

# The example suites' repositories (their branches are the demo's treatments).
examples/zephyr-pipeline/make-repo.sh >/dev/null
examples/s3-server/make-repo.sh >/dev/null

if [ "$want_dev" = 1 ]; then
  have=$(cargo leptos --version 2>/dev/null | awk '{print $2}' || true)
  if [ "$have" != "0.3.10" ]; then
    say "installing cargo-leptos 0.3.10 (found: ${have:-none}); about 14 minutes"
    # 0.3.11 needs rustc 1.96.
    cargo install cargo-leptos --locked --version 0.3.10 --quiet
  fi
fi
say "ready"
