#!/usr/bin/env python3
"""A stand-in for MinIO's warp, for tests on a machine where warp cannot be installed: it takes warp's
command line (put|get|mixed --host --obj.size --concurrent --duration --bucket), drives the real load with
`arbiter load` against the real server (keys from WARP_ACCESS_KEY / WARP_SECRET_KEY, as warp reads them),
and prints warp's text report (one `Report: OP` block per operation, alphabetical, with `* Average:` and
`* Reqs:` lines). The test writes ARBITER's path in."""
import json, os, subprocess, sys

ARBITER = "@ARBITER@"

def main():
    mode, args = sys.argv[1], sys.argv[2:]
    opt = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--") and not args[i + 1].startswith("--")}
    env = {"PATH": os.environ.get("PATH", ""), "ARBITER_S3_ACCESS_KEY": os.environ["WARP_ACCESS_KEY"],
           "ARBITER_S3_SECRET_KEY": os.environ["WARP_SECRET_KEY"]}
    scheme = "https" if "--tls" in args else "http"
    out = subprocess.run([ARBITER, "load", "--endpoint", f"{scheme}://{opt['--host']}", "--workload", mode,
                          "--size", opt["--obj.size"], "--concurrency", opt["--concurrent"], "--duration", opt["--duration"],
                          "--warmup", "0s", "--bucket", opt["--bucket"], "--json"], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        return 1
    report = json.loads(out.stdout)
    for op in sorted((o for o in report["ops"] if o["op"] != "TOTAL"), key=lambda o: o["op"]):
        print(f"Report: {op['op']}. Concurrency: {opt['--concurrent']}. Ran: {opt['--duration']}")
        rate = f"{op['reqps']:.2f} obj/s"
        if op.get("throughput_bps") is not None:
            rate = f"{op['throughput_bps'] / 1048576:.2f} MiB/s, " + rate
        print(f" * Average: {rate}")
        if op.get("latency_avg_ms") is not None:
            print(f" * Reqs: Avg: {op['latency_avg_ms']:.1f}ms, 50%: {op['latency_p50_ms']:.1f}ms, "
                  f"90%: {op['latency_p90_ms']:.1f}ms, 99%: {op['latency_p99_ms']:.1f}ms")
        print(f"Errors: {op['errors']}")
        print(f"Throughput, split into 1 x 1s:")
        print(f" * Fastest: {rate}")
        print()
    return 0

sys.exit(main())
