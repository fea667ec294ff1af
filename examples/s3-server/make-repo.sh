#!/usr/bin/env bash
# Makes the warp example suite's git repository. Its "server" is s3s-fs 0.14.1 from crates.io (installed by
# scripts/setup.sh); `build.sh` writes target/s3-server, the launcher the suite starts. One branch per kind
# of change Arbiter should judge:
#   main            s3s-fs as it is                                                     → baseline
#   cpu-starved     s3s-fs pinned (taskset) to CPU 0, which it shares with a busy loop  → FAIL (real slowdown)
#   exits-at-start  the launcher prints an error and exits 1                            → phase fails fast
#   never-healthy   the launcher never opens its port                                   → health timeout
#   bisect-sync     4 commits on main; only the 3rd slows the server when drive sync is on (the sync-on
#                   cells: one CPU shared with a busy loop) → a bisection of a sync-on cell names the 3rd
# Commits have fixed authors and dates, so the SHAs are the same on every machine.
#
#   examples/s3-server/make-repo.sh [DEST]    (default: examples/s3-server/repo; kept if complete)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/repo}
branches=(cpu-starved exits-at-start never-healthy bisect-sync)

complete() {
  [ -d "$dest/.git" ] || return 1
  for b in main "${branches[@]}"; do git -C "$dest" rev-parse -q --verify "$b" >/dev/null || return 1; done
}
if complete; then
  echo "make-repo: $dest is complete"
  exit 0
fi
rm -rf "$dest"
mkdir -p "$dest"

export GIT_AUTHOR_NAME="Arbiter example" GIT_AUTHOR_EMAIL="example@arbiter.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
commit() { # DATE MESSAGE
  git -C "$dest" add -A
  GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git -C "$dest" commit -q -m "$2"
}
# launcher BODY: the part of target/s3-server after the s3s-fs lookup.
launcher() {
  cat > "$dest/launcher.sh" <<SH
#!/bin/sh
# The S3 server under test: s3s-fs with the arguments Arbiter passes (--host, --port, keys, data dir).
$1
SH
}

git -C "$dest" init -q -b main
git -C "$dest" config core.autocrlf false
cat > "$dest/build.sh" <<'SH'
#!/bin/sh
# "Builds" the server: finds s3s-fs and writes target/s3-server, the program the suite starts.
set -eu
s3s=$(command -v s3s-fs || true)
[ -n "$s3s" ] || s3s="${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs"
[ -x "$s3s" ] || { echo "build.sh: s3s-fs is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
mkdir -p target
sed "s|@S3S_FS@|$s3s|g" launcher.sh > target/s3-server
chmod +x target/s3-server
echo "build.sh: target/s3-server runs $s3s"
SH
chmod +x "$dest/build.sh"
echo "target/" > "$dest/.gitignore"
launcher 'exec "@S3S_FS@" "$@"'
commit "2026-06-01T10:00:00Z" "s3-server: s3s-fs 0.14.1 behind a launcher"

git -C "$dest" checkout -q -b cpu-starved main
launcher '# A real slowdown: the server gets one CPU, and shares it with a busy loop (same process group,
# so it stops with the server).
taskset -c 0 sh -c "while :; do :; done" &
exec taskset -c 0 "@S3S_FS@" "$@"'
commit "2026-06-02T10:00:00Z" "s3-server: run on one CPU shared with a busy loop"

git -C "$dest" checkout -q -b exits-at-start main
launcher 'echo "s3-server: refusing to start: the data dir layout is not supported" >&2
exit 1'
commit "2026-06-03T10:00:00Z" "s3-server: fail at start"

git -C "$dest" checkout -q -b never-healthy main
launcher 'echo "s3-server: waiting for a cluster that never forms" >&2
exec sleep 100000'
commit "2026-06-04T10:00:00Z" "s3-server: never open the port"

git -C "$dest" checkout -q -b bisect-sync main
echo "# s3-server notes" > "$dest/NOTES.md"
commit "2026-06-10T10:00:00Z" "notes: start a notes file"
echo "- the launcher passes every argument to s3s-fs" >> "$dest/NOTES.md"
commit "2026-06-10T11:00:00Z" "notes: the launcher"
launcher '# With drive sync on, flush like a real disk would: here, one CPU shared with a busy loop.
if [ "${RUSTFS_DRIVE_SYNC_ENABLE:-false}" = true ]; then
  taskset -c 0 sh -c "while :; do :; done" &
  exec taskset -c 0 "@S3S_FS@" "$@"
fi
exec "@S3S_FS@" "$@"'
GIT_AUTHOR_NAME="Bisect culprit" GIT_AUTHOR_EMAIL="culprit@arbiter.invalid" commit "2026-06-10T12:00:00Z" \
  "s3-server: honour drive sync (slower with it on)"
echo "- drive sync comes in RUSTFS_DRIVE_SYNC_ENABLE" >> "$dest/NOTES.md"
commit "2026-06-10T13:00:00Z" "notes: drive sync"

git -C "$dest" checkout -q main
echo "make-repo: made $dest (main, ${branches[*]})"
