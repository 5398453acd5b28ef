#!/usr/bin/env python3
"""What the shape of a _bulk answer costs the server.

    bench/answer_cost.py [--url http://127.0.0.1:19240] [--file DATA] [--docs 5000]
                         [--rounds 30]

The same kind of request (DOCS documents without _id, so that no version
lookup differs between requests, sent to one node) goes out one at a time
with each answer shape in turn, round by round; for every request it takes
the node JVMs' CPU time (utime+stime from /proc/<pid>/stat, pids from
_nodes/process: the cluster must run on this machine) before and after, and
its wall time. Shapes: the filter_path libesbulk asks for, the shorter one
it asks for with result.failures_only=true, the limit program's
(errors,items.*.error: positions are lost, successes are left out), the
status alone, none at all (the full answer), and the full answer
gzip-compressed by the server (Accept-Encoding: gzip). Prints, per shape, the
median server CPU milliseconds and wall milliseconds per request and the
answer's bytes. One JSON line at the end. Bounded: ROUNDS x 6 requests.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time
import urllib.request

FULL = ("items.*._index,items.*._id,items.*.status,items.*.result,items.*._seq_no,"
        "items.*._primary_term,items.*._version,items.*.error.type,items.*.error.reason,"
        "items.*.error.caused_by.type,items.*.error.caused_by.reason,error.type,error.reason,status")
FAILURES_ONLY = ("items.*.status,items.*.result,items.*.error.type,items.*.error.reason,"
                 "items.*.error.caused_by.type,items.*.error.caused_by.reason,error.type,"
                 "error.reason,status")
SHAPES = [
    ("libesbulk (full results)", "/_bulk?filter_path=" + FULL, False),
    ("libesbulk result.failures_only", "/_bulk?filter_path=" + FAILURES_ONLY, False),
    ("status only (items.*.status)", "/_bulk?filter_path=items.*.status", False),
    ("limit program", "/_bulk?filter_path=errors,items.*.error", False),
    ("no filter_path", "/_bulk", False),
    ("no filter_path, gzip answer", "/_bulk", True),
]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def call(url, method="GET", body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read(), r.headers


def jvm_cpu(pids):
    total = 0.0
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return total


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:19240")
    ap.add_argument("--file", help="one JSON document per line (default: generated)")
    ap.add_argument("--docs", type=int, default=5000, help="per request (default: flush.docs)")
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args(argv)
    host = a.url.split("//", 1)[1].split(":", 1)[0]
    if not (host == "localhost" or host.startswith("127.")):
        raise SystemExit("answer_cost: loopback clusters only")
    nodes = json.loads(call(a.url + "/_nodes/process")[0])["nodes"].values()
    pids = [n["process"]["id"] for n in nodes]
    if a.file:
        with open(a.file, "rb") as f:
            lines = [next(f).strip() for _ in range(a.docs)]
    else:
        lines = [json.dumps({"field1": "%032x" % (i * 7919), "field4": i % 1000, "field5": "ABCD"[i % 4],
                             "field6": i / 7.0}).encode() for i in range(a.docs)]
    index = "answer-cost-%d" % os.getpid()
    call(a.url + "/" + index, "PUT", json.dumps(
        {"settings": {"number_of_shards": 6, "number_of_replicas": 0}}).encode(),
         {"Content-Type": "application/json"})
    call(a.url + "/_cluster/health/" + index + "?wait_for_status=green&timeout=60s")
    action = json.dumps({"index": {"_index": index}}).encode()
    body = b"".join(action + b"\n" + ln + b"\n" for ln in lines)
    cpu = {s[0]: [] for s in SHAPES}
    wall = {s[0]: [] for s in SHAPES}
    size = {}
    try:
        for _ in range(3):  # warm-up, not counted
            call(a.url + SHAPES[0][1], "POST", body, {"Content-Type": "application/x-ndjson"})
        for _ in range(a.rounds):
            for name, path, gz in SHAPES:
                headers = {"Content-Type": "application/x-ndjson"}
                if gz:
                    headers["Accept-Encoding"] = "gzip"
                c0, t0 = jvm_cpu(pids), time.monotonic()
                data, h = call(a.url + path, "POST", body, headers)
                t1, c1 = time.monotonic(), jvm_cpu(pids)
                cpu[name].append((c1 - c0) * 1000)
                wall[name].append((t1 - t0) * 1000)
                size[name] = len(data)
                if gz and h.get("Content-Encoding") == "gzip":
                    data = gzip.decompress(data)
                if json.loads(data).get("errors"):
                    raise SystemExit("answer_cost: the cluster refused documents")
    finally:
        call(a.url + "/" + index, "DELETE")
    out = {}
    print("answer shape                         server CPU ms/req  wall ms/req  answer bytes"
          "  (%d docs per request, median of %d)" % (a.docs, a.rounds))
    for name, _, _ in SHAPES:
        out[name] = {"server_cpu_ms": statistics.median(cpu[name]),
                     "wall_ms": statistics.median(wall[name]), "answer_bytes": size[name]}
        print("%-36s %17.1f %12.1f %13d" % (name, out[name]["server_cpu_ms"], out[name]["wall_ms"],
                                            size[name]))
    print(json.dumps({"docs": a.docs, "rounds": a.rounds, "shapes": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
