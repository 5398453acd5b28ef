#!/usr/bin/env python3
"""opensearch-py contender of libesbulk's benchmark (bench/run.py).

Drives opensearch-py's bulk helpers the way a typical loading script does:
one client over every node URL, a generator that yields one action dict per
document, chunk_size = the shared batch size, and for parallel_bulk
thread_count = the shared concurrency. streaming_bulk sends one request at a
time by design (it has no concurrency setting). The documents are read from
the NDJSON file and parsed with json.loads (unless --raw) before the clock
starts, as every other contender has its documents in memory first: the
timed part is the helper's, not the file's or the JSON decoder's.

    os_py.py --mode parallel|streaming --url URL[,URL...] --index NAME
             --file DATA [--ids] [--batch N] [--threads N] [--raw]

Prints one JSON line {"docs":N,"seconds":S,"failed":F,...}; exits non-zero
if any document failed.
"""
import argparse
import json
import sys
import time

from opensearchpy import OpenSearch, helpers


def sources(path, raw):
    """Every document of the file, parsed (or as a string with raw)."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            if line:
                out.append(line.decode() if raw else json.loads(line))
    return out


def actions(srcs, index, ids):
    for k, src in enumerate(srcs, 1):
        a = {"_index": index, "_source": src}
        if ids:
            a["_id"] = str(k)
        yield a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("parallel", "streaming"), required=True)
    ap.add_argument("--url", default="http://127.0.0.1:19200")
    ap.add_argument("--index", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--ids", action="store_true")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--raw", action="store_true",
                    help="pass each line as a string _source (no json.loads)")
    a = ap.parse_args()

    client = OpenSearch(hosts=a.url.split(","), timeout=120,
                        pool_maxsize=max(10, a.threads))
    srcs = sources(a.file, a.raw)
    gen = actions(srcs, a.index, a.ids)
    common = dict(chunk_size=a.batch, raise_on_error=False, raise_on_exception=False)
    docs = failed = 0
    first_error = None
    t0 = time.monotonic()
    if a.mode == "parallel":
        it = helpers.parallel_bulk(client, gen, thread_count=a.threads, **common)
    else:
        it = helpers.streaming_bulk(client, gen, **common)
    for ok, item in it:
        docs += 1
        if not ok:
            failed += 1
            if first_error is None:
                first_error = json.dumps(item, default=str)[:300]
    secs = time.monotonic() - t0
    out = {"docs": docs, "seconds": secs, "failed": failed, "mode": a.mode,
           "threads": a.threads if a.mode == "parallel" else 1}
    if first_error:
        out["first_error"] = first_error
    print(json.dumps(out), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
