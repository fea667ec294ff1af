"""A small datakit-like pipeline on Zephyr: exact dedup → tokenize → MinHash signatures, over a generated
local corpus. It runs Zephyr for real (fray's LocalClient, one subprocess per shard so CPU and memory are
measured per shard) and routes Zephyr's stats to the finelog server it is given, so every stage leaves
a `zephyr.stage` row keyed by the execution id this script prints.

    python datakit.py --run-tag TAG --finelog-url URL --sample local/small --sources 4 --workers 2 --work-dir DIR

The knobs below are what this example repository's branches change (see make-repo.sh).
"""

import argparse
import hashlib
import json
import logging
import os
import random
import shutil
import sys
import time

NUM_PERM = 24  # MinHash permutations per document: the minhash stage's CPU cost
TABLE_MIB = 0  # a lookup table each tokenize shard keeps in memory
FAIL_IN = None  # a stage ("dedup", "tokenize" or "minhash") that raises

SAMPLES = {"local/tiny": 300, "local/small": 1200, "local/medium": 5000}  # documents per source file
VOCABULARY = [f"w{i:04d}" for i in range(2000)]


def corpus(root, sample, sources):
    """The input: `sources` JSONL files generated from a fixed seed, made once and shared by every arm."""
    path = os.path.join(root, "corpora", f"{sample.replace('/', '-')}-x{sources}")
    if os.path.isdir(path):
        return path
    tmp = f"{path}.{os.getpid()}.tmp"
    os.makedirs(tmp, exist_ok=True)
    for s in range(sources):
        rng = random.Random(f"{sample}:{s}")
        with open(os.path.join(tmp, f"part-{s:03d}.jsonl"), "w") as f:
            for i in range(SAMPLES[sample]):
                if i % 9 == 0:  # near-boilerplate that exact dedup removes
                    text = f"Terms of use. Page {i % 5}."
                else:
                    text = " ".join(rng.choice(VOCABULARY) for _ in range(40 + rng.randrange(60)))
                f.write(json.dumps({"id": f"{s}-{i}", "text": text}) + "\n")
    try:
        os.rename(tmp, path)
    except OSError:  # another run made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def fail_if(stage):
    if FAIL_IN == stage:
        raise RuntimeError(f"{stage}: failing on purpose (this branch's FAIL_IN)")


def read_source(path):
    with open(path) as f:
        for line in f:
            doc = json.loads(line)
            doc["text"] = " ".join(doc["text"].lower().split())
            yield doc


def content_key(doc):
    fail_if("dedup")
    return hashlib.sha1(doc["text"].encode()).hexdigest()


_table = None


def tokenize(docs, _shard):
    global _table
    fail_if("tokenize")
    if TABLE_MIB and _table is None:
        _table = bytearray(TABLE_MIB * 2**20)
        for i in range(0, len(_table), 4096):  # touch every page, so the memory is really resident
            _table[i] = 1
    for doc in docs:
        yield {"id": doc["id"], "tokens": doc["text"].split()}


def minhash(doc):
    fail_if("minhash")
    shingles = {" ".join(doc["tokens"][i : i + 3]).encode() for i in range(max(1, len(doc["tokens"]) - 2))}
    signature = []
    for p in range(NUM_PERM):
        salt = p.to_bytes(4, "little")
        signature.append(min(int.from_bytes(hashlib.blake2b(s, digest_size=8, salt=salt).digest(), "little") for s in shingles))
    return {"id": doc["id"], "minhash": signature}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run-tag", required=True)
    p.add_argument("--finelog-url", required=True)
    p.add_argument("--sample", choices=sorted(SAMPLES), default="local/small")
    p.add_argument("--sources", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--work-dir", required=True)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from fray.local_backend import LocalClient
    from zephyr import Dataset, ZephyrContext
    from zephyr.runners import SubprocessRunner
    from zephyr.stats import StatsWriter

    # Without an Iris cluster Zephyr finds no finelog endpoint; give it the one Arbiter passes in (the
    # shard subprocesses receive it from the coordinator).
    StatsWriter.resolve_url = staticmethod(lambda: args.finelog_url)

    inputs = corpus(args.work_dir, args.sample, args.sources)
    out = os.path.join(args.work_dir, "runs", args.run_tag)
    client = LocalClient()
    ctx = ZephyrContext(
        client=client,
        max_workers=args.workers,
        name=f"datakit-{args.run_tag}",
        chunk_storage_prefix=os.path.join(out, "chunks"),
        stage_runner_factory=lambda n: SubprocessRunner(num_workers=n),
    )
    pipeline = (
        Dataset.from_files(os.path.join(inputs, "*.jsonl"))
        .flat_map(read_source)
        .deduplicate(content_key, num_output_shards=args.sources)
        .map_shard(tokenize)
        .reshard(args.sources)
        .map(minhash)
        .write_jsonl(os.path.join(out, "minhash-{shard:05d}.jsonl"))
    )
    started = time.monotonic()
    try:
        result = ctx.execute(pipeline)
        print(f"run {args.run_tag}: wrote {len(result.results)} files in {time.monotonic() - started:.1f}s", flush=True)
    finally:
        client.shutdown(wait=False)
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
