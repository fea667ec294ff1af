"""The figures of scripts/bench-noise.sh: reads the scratch server's SQLite store (argv[1]) and a list of
"PROTOCOL EXPERIMENT_ID" lines on stdin, and prints for each protocol, over its same-code experiments:

  * the per-trial CPU CV of every stage (the measured trials' CPU-seconds of that stage, each experiment's
    CV, then their mean),
  * the order effect: the mean over pairs of log(first trial / second trial) of the biggest stage, as %,
  * the first-trial effect: the experiment's first trial (whatever its role) against the mean of its other
    trials, biggest stage, as %, and for warm-up protocols the first *measured* trial likewise,
  * false claims: experiments claiming any change (a regression or tradeoff verdict, or any stage's CPU or
    elapsed detected higher or lower), out of how many, and
  * pairs used (for trials = "auto"),
  * the verdicts, and how many measured trials ran on CPUs reserved for them (their host facts).
No third-party packages: the standard library's sqlite3 and statistics."""
import json
import math
import sqlite3
import statistics
import sys
from collections import defaultdict

db = sqlite3.connect(sys.argv[1])
runs = defaultdict(list)
for line in sys.stdin:
    if line.strip():
        protocol, eid = line.split()
        runs[protocol].append(int(eid))


def stage_cpu(eid):
    """{trial: (seq, repeat, position, role, {stage: cpu})} of succeeded trials, in seq order."""
    out = {}
    q = """SELECT t.id, t.seq, t.repeat_index, t.pair_position, t.role, s.stage_name, s.cpu_time_total
           FROM trials t JOIN stage_rows s ON s.trial_id = t.id
           WHERE t.experiment_id = ? AND t.state = 'succeeded' ORDER BY t.seq, t.attempt"""
    for tid, seq, rep, pos, role, stage, cpu in db.execute(q, (eid,)):
        t = out.setdefault(tid, (seq, rep, pos, role, defaultdict(float)))
        t[4][stage] += cpu
    return sorted(out.values())


def isolation(eid):
    """(reserved, of, why) over the measured trials' host facts."""
    reserved, of, why = 0, 0, set()
    for (facts,) in db.execute("SELECT host_facts FROM trials WHERE experiment_id = ? AND role = 'measured' AND host_facts IS NOT NULL", (eid,)):
        h = json.loads(facts)
        of += 1
        if h.get("reserved_cpus"):
            reserved += 1
        elif h.get("shared_cpus_why"):
            why.add(h["shared_cpus_why"])
    return reserved, of, why


def report(eid):
    row = db.execute("SELECT verdict, report FROM verdicts WHERE experiment_id = ? ORDER BY id DESC LIMIT 1", (eid,)).fetchone()
    return (row[0], json.loads(row[1])) if row else (None, {})


def claims(verdict, rep):
    stages = (rep.get("treatments") or [{}])[0].get("stages") or rep.get("stages") or []
    detected = lambda o: o in ("higher", "lower")
    return verdict in ("regression", "tradeoff") or any(detected(s.get("cpu_outcome")) or detected(s.get("elapsed_outcome")) for s in stages)


def pct(x):
    return f"{x:+.1f} %"


for protocol, eids in runs.items():
    cvs = defaultdict(list)
    order, first, first_measured, claimed, pairs = [], [], [], 0, []
    verdicts, iso = defaultdict(int), [0, 0, set()]
    for eid in eids:
        trials = stage_cpu(eid)
        measured = [t for t in trials if t[3] == "measured"]
        if not measured:
            continue
        stages = sorted({s for t in measured for s in t[4]})
        big = max(stages, key=lambda s: statistics.mean(t[4].get(s, 0.0) for t in measured))
        for s in stages:
            xs = [t[4][s] for t in measured if s in t[4]]
            if len(xs) > 1 and statistics.mean(xs) > 0:
                cvs[s].append(100 * statistics.stdev(xs) / statistics.mean(xs))
        by_pair = defaultdict(dict)
        for seq, rep, pos, role, cpu in measured:
            if pos is not None:
                by_pair[rep][pos] = cpu.get(big, 0.0)
        for p in by_pair.values():
            if 0 in p and 1 in p and p[0] > 0 and p[1] > 0:
                order.append(math.log(p[0] / p[1]))
        def against_rest(head, rest):
            rest = [t[4].get(big, 0.0) for t in rest]
            if rest and statistics.mean(rest) > 0:
                return 100 * (head[4].get(big, 0.0) / statistics.mean(rest) - 1)
        f = against_rest(trials[0], trials[1:])
        if f is not None:
            first.append(f)
        if trials[0][3] != "measured":
            fm = against_rest(measured[0], measured[1:])
            if fm is not None:
                first_measured.append(fm)
        verdict, rep = report(eid)
        claimed += claims(verdict, rep)
        verdicts[verdict] += 1
        r, o, w = isolation(eid)
        iso[0] += r
        iso[1] += o
        iso[2] |= w
        used = (rep.get("sequential") or {}).get("pairs_used")
        if used:
            pairs.append(used)
    n = len(eids)
    print(f"== {protocol}: {n} same-code experiments")
    for s, v in sorted(cvs.items()):
        print(f"  CPU CV per trial, {s}: {statistics.mean(v):.1f} % (mean of {len(v)}; range {min(v):.1f}–{max(v):.1f} %)")
    if order:
        print(f"  order effect (first of a pair against second, biggest stage): {pct(100 * (math.exp(statistics.mean(order)) - 1))} over {len(order)} pairs")
    if first:
        print(f"  the experiment's first trial against its others (biggest stage): {pct(statistics.mean(first))} (mean of {len(first)})")
    if first_measured:
        print(f"  its first measured trial (after the warm-up) against the others: {pct(statistics.mean(first_measured))} (mean of {len(first_measured)})")
    print(f"  claimed a change: {claimed} of {n}; verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items(), key=str)))
    print(f"  measured trials on CPUs reserved for them: {iso[0]} of {iso[1]}" + (f" (others: {'; '.join(sorted(iso[2]))})" if iso[2] else ""))
    if pairs:
        print(f"  pairs used (trials = auto): mean {statistics.mean(pairs):.1f}, median {statistics.median(pairs)}, max {max(pairs)}")
