#!/usr/bin/env bash
# Makes the example suite's git repository: `main` holds the pipeline (datakit.py) as the baseline, and
# one branch per kind of change Arbiter should judge:
#   cpu-heavier    4× the MinHash permutations: more CPU in the minhash stage only   → regression
#   cheaper        half the permutations: less CPU in the minhash stage             → pass (cheaper)
#   memory-hungry  tokenize keeps a 768 MiB table: above the suite's 512 MiB worker  → regression (memory)
#   failing-stage  tokenize raises                                                  → regression (new failure)
#   bisect-range   8 commits on main; only the 5th (29 permutations instead of 24) adds ~20 % CPU to the
#                  minhash stage, the others touch notes and comments → a bisection names the 5th
#   bisect-flat    3 commits on main that change nothing measurable → "no culprit: the ends do not differ"
# Commits have fixed authors and dates, so the SHAs are the same on every machine.
#
#   examples/zephyr-pipeline/make-repo.sh [DEST]    (default: examples/zephyr-pipeline/repo; kept if complete)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/repo}
branches=(cpu-heavier cheaper memory-hungry failing-stage bisect-range bisect-flat)

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
  GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git -C "$dest" commit -q -am "$2"
}
# change FROM TO: one knob line of datakit.py, which must be there.
change() {
  grep -qxF "$1" "$dest/datakit.py" || { echo "make-repo: datakit.py has no line '$1'" >&2; exit 1; }
  python3 - "$dest/datakit.py" "$1" "$2" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
open(path, "w").write(text.replace(old + "\n", new + "\n", 1))
PY
}

git -C "$dest" init -q -b main
git -C "$dest" config core.autocrlf false
cp "$here/datakit.py" "$dest/datakit.py"
git -C "$dest" add datakit.py
commit "2026-06-01T10:00:00Z" "datakit: exact dedup, tokenize and MinHash on Zephyr"

git -C "$dest" checkout -q -b cpu-heavier main
change "NUM_PERM = 24  # MinHash permutations per document: the minhash stage's CPU cost" \
       "NUM_PERM = 96  # MinHash permutations per document: the minhash stage's CPU cost"
commit "2026-06-02T10:00:00Z" "minhash: 96 permutations for finer similarity estimates"

git -C "$dest" checkout -q -b cheaper main
change "NUM_PERM = 24  # MinHash permutations per document: the minhash stage's CPU cost" \
       "NUM_PERM = 12  # MinHash permutations per document: the minhash stage's CPU cost"
commit "2026-06-03T10:00:00Z" "minhash: 12 permutations are enough for exact-ish dedup"

git -C "$dest" checkout -q -b memory-hungry main
change "TABLE_MIB = 0  # a lookup table each tokenize shard keeps in memory" \
       "TABLE_MIB = 768  # a lookup table each tokenize shard keeps in memory"
commit "2026-06-04T10:00:00Z" "tokenize: keep a vocabulary table in memory"

git -C "$dest" checkout -q -b failing-stage main
change 'FAIL_IN = None  # a stage ("dedup", "tokenize" or "minhash") that raises' \
       'FAIL_IN = "tokenize"  # a stage ("dedup", "tokenize" or "minhash") that raises'
commit "2026-06-05T10:00:00Z" "tokenize: reject documents without a language tag"

# note FILE LINE MESSAGE DATE: a commit that appends a line to a notes file (nothing the pipeline reads).
note() {
  echo "$2" >> "$dest/$1"
  git -C "$dest" add "$1"
  GIT_AUTHOR_DATE="$4" GIT_COMMITTER_DATE="$4" git -C "$dest" commit -q -m "$3"
}
git -C "$dest" checkout -q -b bisect-range main
note NOTES.md "# datakit notes" "notes: start a notes file" "2026-06-10T10:00:00Z"
note NOTES.md "- dedup keeps the first document of each content hash" "notes: how dedup picks a document" "2026-06-10T11:00:00Z"
note NOTES.md "- tokenize lowercases and splits on whitespace" "notes: tokenize" "2026-06-10T12:00:00Z"
note NOTES.md "- the corpus is generated once per sample and sources" "notes: the corpus" "2026-06-10T13:00:00Z"
change "NUM_PERM = 24  # MinHash permutations per document: the minhash stage's CPU cost" \
       "NUM_PERM = 29  # MinHash permutations per document: the minhash stage's CPU cost"
GIT_AUTHOR_NAME="Bisect culprit" GIT_AUTHOR_EMAIL="culprit@arbiter.invalid" commit "2026-06-10T14:00:00Z" \
  "minhash: 29 permutations for a tighter Jaccard estimate"
note NOTES.md "- minhash signatures are written per shard" "notes: minhash output" "2026-06-10T15:00:00Z"
note NOTES.md "- every stage reports to finelog" "notes: stats" "2026-06-10T16:00:00Z"
note NOTES.md "- see the README for the branches" "notes: pointer to the README" "2026-06-10T17:00:00Z"

git -C "$dest" checkout -q -b bisect-flat main
note CHANGES.md "# changes" "changes: start a changelog" "2026-06-11T10:00:00Z"
note CHANGES.md "- nothing yet" "changes: nothing yet" "2026-06-11T11:00:00Z"
note CHANGES.md "- still nothing" "changes: still nothing" "2026-06-11T12:00:00Z"

git -C "$dest" checkout -q main
echo "make-repo: made $dest (main + ${branches[*]})"
