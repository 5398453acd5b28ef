#!/usr/bin/env python3
"""A/B of bulk clients (or of library builds) on the benchmark's own cluster,
with the cluster's CPU measured per run.

Usage
-----
    bench/ab.py [--url URL] [--shape gateway|orders] ROUNDS NAME=COMMAND...

Each round runs every COMMAND once, in turn (the order reverses every other
round), each into a fresh index of 6 shards and no replica made with the
shape's mapping (bench/run.py's). COMMAND is a shell command; {url} and
{index} in it are replaced. Its last stdout line must be JSON with
"docs_per_s" (esbulk_bench and limit print one); "cpu_s" is shown when
there (esbulk_bench's process CPU over its run).

Per run it prints docs/s, the node JVMs' CPU (from /proc, through the pids
in _nodes/process, so the cluster must run on this machine), the client's
CPU, HTTP connections opened, GC and refresh time; then the medians, and
per round each command's docs/s and client CPU over the first command's.

The cluster: `make bench BENCH_ARGS="--keep-cluster ..."` leaves the
benchmark's own cluster on 127.0.0.1:19240 (the default --url); stop it
with `make cluster-stop`. Two builds of the library, side by side:

    cp .libs/libesbulk.so.0.0.0 /tmp/new/libesbulk.so.0   # and the same for old
    bench/ab.py --shape orders 5 \\
      "old=LD_LIBRARY_PATH=/tmp/old bench/esbulk_bench --url {url} --index {index} \\
           --file bench-out/orders-500000.ndjson --ids --set routing.level=node" \\
      "new=LD_LIBRARY_PATH=/tmp/new bench/esbulk_bench ..."
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import MAPPINGS  # noqa: E402  (the benchmark's own mappings)


def http(url, method, path, body=None):
    req = urllib.request.Request(url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"null")


def node_pids(url):
    return [n["process"]["id"] for n in http(url, "GET", "/_nodes/process")["nodes"].values()]


def cpu_s(pids):
    t = 0
    for p in pids:
        with open("/proc/%d/stat" % p) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        t += int(fields[11]) + int(fields[12])  # utime + stime
    return t / os.sysconf("SC_CLK_TCK")


def counters(url):
    s = http(url, "GET", "/_nodes/stats/jvm,indices,http")
    d = {"gc_ms": 0, "refresh_ms": 0, "conns": 0}
    for n in s["nodes"].values():
        for g in n["jvm"]["gc"]["collectors"].values():
            d["gc_ms"] += g["collection_time_in_millis"]
        d["refresh_ms"] += n["indices"]["refresh"]["total_time_in_millis"]
        d["conns"] += n["http"]["total_opened"]
    return d


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:19240")
    ap.add_argument("--shape", choices=sorted(MAPPINGS), default="gateway")
    ap.add_argument("rounds", type=int)
    ap.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    a = ap.parse_args(argv)
    cmds = []
    for c in a.commands:
        if "=" not in c:
            ap.error("not NAME=COMMAND: " + c)
        cmds.append(tuple(c.split("=", 1)))
    pids = node_pids(a.url)
    runs = {}  # round -> name -> (docs/s, server cpu, client cpu)
    failed = 0
    for r in range(a.rounds):
        for name, cmd in (cmds if r % 2 == 0 else cmds[::-1]):
            index = "ab-%d-%s-%d" % (os.getpid(), name.lower(), r)
            http(a.url, "PUT", "/" + index,
                 {"settings": {"index": {"number_of_shards": 6, "number_of_replicas": 0}},
                  "mappings": MAPPINGS[a.shape]})
            http(a.url, "GET", "/_cluster/health/%s?wait_for_status=green&timeout=60s" % index)
            time.sleep(1)
            k0, c0 = counters(a.url), cpu_s(pids)
            p = subprocess.run(cmd.format(url=a.url, index=index), shell=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            c1, k1 = cpu_s(pids), counters(a.url)
            http(a.url, "DELETE", "/" + index)
            try:
                out = json.loads(p.stdout.strip().splitlines()[-1])
                dps = float(out["docs_per_s"])
            except (ValueError, KeyError, IndexError):
                out, dps = {}, 0.0
            if p.returncode != 0 or dps == 0:
                failed += 1
                sys.stderr.write("ab: %s failed (exit %d): %s\n" % (name, p.returncode,
                                                                    p.stderr.strip()[-300:]))
                continue
            runs.setdefault(r, {})[name] = (dps, c1 - c0, float(out.get("cpu_s", 0.0)))
            print("%-12s r%d %9.0f docs/s  server %6.2f s  client %.3f s  conns %d  gc %d ms  "
                  "refresh %d ms" % (name, r, dps, c1 - c0, out.get("cpu_s", 0.0),
                                      k1["conns"] - k0["conns"], k1["gc_ms"] - k0["gc_ms"],
                                      k1["refresh_ms"] - k0["refresh_ms"]), flush=True)
    first = cmds[0][0]
    print("medians (ratios: median of the per-round ratios to %s)" % first)
    for name, _ in cmds:
        mine = [rr[name] for rr in runs.values() if name in rr]
        if not mine:
            continue
        pairs = [(rr[name], rr[first]) for rr in runs.values() if name in rr and first in rr]
        line = "%-12s %9.0f docs/s  server %6.2f s  client %.3f s" % (
            name, statistics.median(m[0] for m in mine), statistics.median(m[1] for m in mine),
            statistics.median(m[2] for m in mine))
        if name != first and pairs:
            line += "  docs/s x%.3f" % statistics.median(x[0] / y[0] for x, y in pairs)
            if all(y[2] > 0 for _, y in pairs):
                line += "  client cpu x%.3f" % statistics.median(x[2] / y[2] for x, y in pairs)
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
