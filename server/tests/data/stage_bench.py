"""A small benchmark for the launch tests: it does real CPU work in two stages, measures its own CPU
time, and reports each stage as a `zephyr.stage` row to the finelog server Arbiter passes in, the way
a Zephyr coordinator does. The knobs at the top are what the test repository's branches change."""

import argparse
import datetime
import hashlib
import os
import sys
import time
import uuid

from zephyr.stats import ZephyrStageStat  # the row Zephyr's coordinator writes

WORK = 2_000_000  # hashes per stage: the CPU cost (~0.1 CPU-s here: well above the 0.05 CPU-s floor)
FAIL_STAGE = None  # a stage name that fails
MEM_PEAK = 100 * 2**20  # reported peak RSS
SLEEP = 0.0  # seconds of idle wait per stage


def stage(name, execution_id, items):
    start, cpu0 = time.monotonic(), time.process_time()
    h = hashlib.sha256()
    for i in range(WORK):
        h.update(i.to_bytes(8, "little"))
    time.sleep(SLEEP)
    elapsed, cpu = time.monotonic() - start, time.process_time() - cpu0
    status = "FAILED" if name == FAIL_STAGE else "END"
    return ZephyrStageStat(execution_id, name, status, datetime.datetime.utcnow(), elapsed, items, items * 64,
                           items / elapsed, items * 64 / elapsed, 2, 100.0, cpu, MEM_PEAK // 2, MEM_PEAK)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--run-tag", required=True)
    p.add_argument("--finelog", required=True)
    args = p.parse_args()
    from finelog.client import LogClient

    execution_id = datetime.datetime.utcnow().strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:8]
    print(f"run tag {args.run_tag} ({os.environ.get('ARBITER_ARM')}): execution_id={execution_id}", flush=True)
    rows = [stage("stage0-Map → Scatter", execution_id, 1000), stage("stage1-Reduce", execution_id, 100)]
    client = LogClient.connect(args.finelog)
    table = client.get_table("zephyr.stage", ZephyrStageStat)
    table.write(rows)
    table.flush(timeout=30)
    client.close()
    if any(r.status == "FAILED" for r in rows):
        print(f"stage {FAIL_STAGE} failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
