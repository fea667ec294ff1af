"""Prints a bisection's figures (GET /api/v1/bisections/{id} on stdin): experiments, probes, trials, wall
time, outcome, and a line per step. Used by scripts/bisect-demo.sh."""
import json
import sys

b = json.load(sys.stdin)
s = b["state"]
steps = s["search"]["steps"]
probes = sum(1 for x in steps if x["role"] == "probe")
trials = sum(x.get("trials", 0) for x in steps if not x.get("reused"))
wall = ((b.get("finished_at") or 0) - b["created_at"]) / 1000
outcome = (s.get("outcome") or {}).get("kind", "running")
print(f"figures: {len(steps)} experiments ({probes} probing), {trials} pairs in all, {wall:.0f} s wall; outcome {outcome}")
for x in steps:
    print(f"  {x['role']:8} #{x.get('experiment_id')!s:<4} {x.get('reading')!s:9} {x.get('trials', 0):>2} pairs  {x.get('words', '')}")
