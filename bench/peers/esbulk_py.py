#!/usr/bin/env python3
"""The esbulk Python package's contenders in libesbulk's benchmark
(bench/run.py), run from the source tree (PYTHONPATH=python/,
ESBULK_LIBRARY=the build's libesbulk.so; bench/run.py sets both).

    esbulk_py.py --mode bulk|bulk-bytes|streaming|indexer|indexer-bytes --url URL
                 --index NAME --file DATA [--ids] [--batch N] [--inflight N]

bulk:          esbulk.helpers.bulk, the one-line switch from opensearch-py:
               the same generator as bench/peers/os_py.py (one action dict
               per document, over documents parsed before the clock starts);
               it returns (successes, errors), raise_on_error=False
bulk-bytes:    the same with each line as the action's _source, as bytes
               (no json.loads, no encoding: sent as it is)
streaming:     esbulk.helpers.streaming_bulk on the same actions (dicts), each
               (ok, {op: item}) iterated, as os_py.py does with parallel_bulk
indexer:       esbulk.Indexer.add_many, chunks of --batch dicts, results
               counted by a default callback
indexer-bytes: the same with the lines as bytes

chunk_size / flush.docs = --batch, max.inflight.per.node = --inflight, node
routing. The documents (dicts from json.loads, or the lines as bytes) are
read from the file before the clock starts, as every contender has them in
memory first (the C, Go and limit contenders load the file, os_py.py parses
it): the timed part is the package's, not the file's or json.loads'. Prints one JSON line {"docs":N,"seconds":S,"failed":F,...} with
the Python side's CPU split where it can be measured: decode_ns_per_doc
(json.loads of the lines, measured apart on the first 2,000: the sample
counts in the client CPU too, so it is kept small),
encode_ns_per_doc (the package's encoding of those dicts, measured apart),
main_thread_ns_per_doc (the calling thread: this script, the encoding, the
calls into the library and the library's work on the caller's side) and
engine_ns_per_doc (the rest of the process CPU: libesbulk's I/O thread), and
for the Indexer modes add_ns_per_doc (CPU of the add_many calls: encoding and
the crossing). Exits non-zero if any document failed.
"""
import argparse
import json
import os
import sys
import time

import esbulk
from esbulk import helpers
from esbulk._indexer import encode_body as esbulk_encode


def lines(path):
    with open(path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            if line:
                yield line


def cpu():
    t = os.times()
    return t.user + t.system


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("bulk", "bulk-bytes", "streaming", "indexer",
                                       "indexer-bytes"),
                    required=True)
    ap.add_argument("--url", default="http://127.0.0.1:19200")
    ap.add_argument("--index", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--ids", action="store_true")
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--inflight", type=int, default=2)
    a = ap.parse_args()
    raw = a.mode.endswith("-bytes")
    conf = {"max.inflight.per.node": a.inflight, "routing.level": "node",
            # bounded by count, as the peers' requests are
            "flush.bytes": 1 << 30, "buffer.max.bytes": 1 << 30}
    out = {"mode": a.mode, "json": esbulk.JSON_ENCODER}

    # json.loads alone, on the first 2,000 lines: the decode share
    sample = []
    for k, line in enumerate(lines(a.file)):
        if k == 2000:
            break
        sample.append(line)
    c0 = time.process_time()
    for line in sample:
        json.loads(line)
    out["decode_ns_per_doc"] = (time.process_time() - c0) * 1e9 / max(1, len(sample))
    if not raw:  # the package's own encoding of those dicts (orjson or json)
        dicts = [json.loads(line) for line in sample]
        c0 = time.process_time()
        for d in dicts:
            esbulk_encode(d)
        out["encode_ns_per_doc"] = (time.process_time() - c0) * 1e9 / max(1, len(dicts))
        del dicts
    del sample

    # the documents, in memory before the clock starts
    srcs = [line if raw else json.loads(line) for line in lines(a.file)]

    docs = failed = 0
    first_error = None
    t0, cpu0, main0 = time.monotonic(), cpu(), time.thread_time()
    if not a.mode.startswith("indexer"):
        def actions():
            for k, src in enumerate(srcs, 1):
                act = {"_index": a.index, "_source": src}
                if a.ids:
                    act["_id"] = str(k)
                yield act
        if a.mode == "streaming":
            for ok, item in helpers.streaming_bulk(a.url, actions(), chunk_size=a.batch,
                                                   raise_on_error=False,
                                                   raise_on_exception=False, esbulk_conf=conf):
                docs += 1
                if not ok:
                    failed += 1
                    if first_error is None:
                        first_error = json.dumps(item, default=str)[:300]
        else:  # what a script that calls helpers.bulk gets: counts and the errors
            n_ok, errors = helpers.bulk(a.url, actions(), chunk_size=a.batch,
                                        raise_on_error=False, raise_on_exception=False,
                                        esbulk_conf=conf)
            docs, failed = n_ok + len(errors), len(errors)
            if errors:
                first_error = json.dumps(errors[0], default=str)[:300]
    else:
        res = {"n": 0, "bad": 0, "first": None}

        def on_result(r):
            res["n"] += 1
            if not r.ok:
                res["bad"] += 1
                if res["first"] is None:
                    res["first"] = "%s %s" % (r.status, r.reason)
        add_cpu = 0.0
        k = 0
        with esbulk.Indexer(a.url, on_result=on_result, block=True, flush_docs=a.batch,
                            **conf) as ix:
            chunk = []
            for src in srcs:
                chunk.append(src)
                if len(chunk) == a.batch:
                    c = time.process_time()
                    ids = [str(i) for i in range(k + 1, k + 1 + len(chunk))] if a.ids else None
                    ix.add_many(a.index, chunk, ids=ids)
                    add_cpu += time.process_time() - c
                    k += len(chunk)
                    chunk = []
                    ix.poll(0)
            if chunk:
                ids = [str(i) for i in range(k + 1, k + 1 + len(chunk))] if a.ids else None
                ix.add_many(a.index, chunk, ids=ids)
                k += len(chunk)
            ix.flush()
        docs, failed, first_error = res["n"], res["bad"], res["first"]
        out["add_ns_per_doc"] = add_cpu * 1e9 / max(1, docs)
    secs = time.monotonic() - t0
    main = time.thread_time() - main0
    out["cpu_ns_per_doc"] = (cpu() - cpu0) * 1e9 / max(1, docs)
    # this (the calling) thread: the script, encoding, the calls into the
    # library and its work on the caller's side; the rest of the process:
    # libesbulk's I/O thread (requests, answers, routing, retries)
    out["main_thread_ns_per_doc"] = main * 1e9 / max(1, docs)
    out["engine_ns_per_doc"] = out["cpu_ns_per_doc"] - out["main_thread_ns_per_doc"]
    out.update({"docs": docs, "seconds": secs, "failed": failed, "inflight": a.inflight})
    if first_error:
        out["first_error"] = first_error
    print(json.dumps(out), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
