#!/usr/bin/env python3
"""The house's counts (usage: scripts/house-counts.py [REPO]), each outside tests (a file's text from its
first `#[cfg(test)]` on, and every `tests/` folder, are left out; comments are stripped):

  key reads     JSON read by key: `v["name"]`, `.get("name")` and `.pointer("/…")` on a serde_json value,
                in app/src and server/src (a header's, a route's path or query parameters' `.get` is not JSON) (a read of a dynamic map — fingerprints, overrides, typed as maps
                — is `map.get(&key)`, not a string literal, and is not counted)
  json! answers `json!(` in server/src/api, but not an audit record's detail (a free-form map)
  Result<_, String>   function signatures and types returning a String error, per crate
  to_string errors    `map_err(|e| e.to_string())` (and `|e| format!("{e}")`), per crate
  largest cycle       from scripts/import-cycles.py

Rerun it at any commit: `git worktree add /tmp/at REV && python3 scripts/house-counts.py /tmp/at`."""
import os, re, subprocess, sys

root = sys.argv[1] if len(sys.argv) > 1 else '.'
crates = [c for c in sorted(os.listdir(root)) if os.path.isfile(os.path.join(root, c, 'Cargo.toml')) and os.path.isdir(os.path.join(root, c, 'src'))]


def sources(folder):
    for dp, _, fs in os.walk(os.path.join(root, folder)):
        for f in sorted(fs):
            if f.endswith('.rs'):
                text = open(os.path.join(dp, f)).read()
                cut = text.find('#[cfg(test)]')
                if cut >= 0:
                    text = text[:cut]
                yield re.sub(r'//[^\n]*', '', text)


KEY = re.compile(r'\[\s*"[A-Za-z_][A-Za-z0-9_-]*"\s*\]|\.get\(\s*"[A-Za-z_][A-Za-z0-9_-]*"\s*\)|\.pointer\(\s*"/')


# Not JSON: an HTTP header, a route's path or query parameters (`headers().get("x-request-id")`,
# `use_params_map().read().get("id")`, `query.get("scale")`).
NOT_JSON = re.compile(r'headers\(\)\.get\(|_map\(\)\.read|query\.get\(')


def count(folder, pattern):
    if pattern is KEY:
        return sum(len(pattern.findall(line)) for t in sources(folder) for line in t.splitlines() if not NOT_JSON.search(line))
    return sum(len(pattern.findall(t)) for t in sources(folder))


print('key reads (outside tests):')
for folder in ('app/src', 'server/src'):
    print(f'  {folder:12} {count(folder, KEY)}')
# An answer built with json!: not an audit record's detail (a free-form map the audit log stores).
JSON_MACRO = re.compile(r'^(?!.*(?:audit|detail)).*json!\(', re.M)
print('json! answers in server/src/api:', count('server/src/api', JSON_MACRO))
STRING_ERR = re.compile(r'Result<[^;{]*?,\s*String>')
TO_STRING = re.compile(r'map_err\(\|\w+\|\s*(?:\w+\.to_string\(\)|format!\("\{\w*\}"\s*(?:,\s*\w+)?\))\)')
print('per crate:            Result<_, String>   map_err(|e| e.to_string())')
for c in crates:
    print(f'  {c:20} {count(c + "/src", STRING_ERR):>8} {count(c + "/src", TO_STRING):>20}')
cycles = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'import-cycles.py'), root], capture_output=True, text=True).stdout
print(cycles.strip().splitlines()[-1] if cycles.strip() else 'largest cycle: none')
