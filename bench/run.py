#!/usr/bin/env python3
"""libesbulk's benchmark harness: shard-routed vs unrouted vs the peers vs the
server's own limit, side by side on the real 3-node OpenSearch test cluster.

Usage
-----
    bench/run.py [--quick] [--rounds N] [--docs N] [--out DIR]
                 [--contenders PATTERN,...] [--shapes gateway,orders]
                 [--ids ids|noid|both] [--batch N] [--inflight K] [--sweep]
                 [--profile] [--report RESULTS_JSON]

    make bench         # full run   (bench/run.py --cluster own)
    make bench-quick   # --quick: ~20k docs, 1 round, in about a minute (CI)
    make bench-sweep   # --sweep: the libesbulk parameter sweep
    make bench-profile # --profile: where the server's CPU goes (JFR), node vs off

Cluster: --cluster shared (default) uses the 3-node OpenSearch 2.19 test
cluster on 127.0.0.1:19200-19202 (tests/cluster/ensure.sh opensearch starts it
if needed; left running). That cluster also holds every test's indices in
512 MB heaps with the JIT stopped at C1 (quick starts for tests); under load
its parent circuit breaker answers 429, and other users' indexing lands in
the server figures (flagged per run). --cluster own starts a cluster for the
benchmark alone (same scripts, 3 nodes on 19240-19242, --heap per node,
default 2g, full JIT, data under OUT/cluster) and stops it at the end
(--keep-cluster leaves it running for the next run; `make cluster-stop`
stops it).

It first runs bench/setup.sh (a venv with opensearch-py and matplotlib under
~/.cache/libesbulk/bench-venv, and `go build` of the opensearch-go contender
into BUILDDIR/bench/os_go) and re-executes itself with the venv's python, then
starts the test cluster if needed (tests/cluster/ensure.sh opensearch).

Data
----
Generated once into --out (reused while the size matches), the same bytes for
every contender, one document body per line:
  gateway-N.ndjson  INFINI Gateway's bulk_reshuffle test shape: timestamp
                    (ISO), field1-3 (md5 hex of random strings), field4
                    (1-1000), field5 (A/B/C/D), field6 (0.1-100.0); ~190 bytes.
  orders-N.ndjson   an order table: order_no, user_id, status, amount,
                    created_at; ~120 bytes; its ids are auto-increment.
"with ids": the _id of line k is the decimal string k; "noid": no _id at all
(libesbulk then generates one, id.generate=time, unless told otherwise).
By default the gateway shape runs with and without ids and the order shape
with ids (--ids both adds orders without ids); --quick runs the gateway shape.

Contenders (a missing program is listed as missing, the rest still run)
----------
  esbulk-node      libesbulk routing.level=node   (bench/esbulk_bench)
  esbulk-shard     libesbulk routing.level=shard
  esbulk-off       libesbulk routing.level=off: the "direct bulk" baseline,
                   each request to the next node in turn
  esbulk-node-fo   libesbulk node routing with result.failures_only=true: the
                   server writes only each item's status and errors (as the
                   limit program asks), successes are counted, not served
  esbulk-off-fo    esbulk-off with result.failures_only=true: the baseline
                   for esbulk-node-fo (same answer shape, no routing)
  esbulk-node-none libesbulk node routing with id.generate=none (noid only:
                   such documents are not routed)
  esbulk-py-bulk   the esbulk Python package's helpers.bulk (the one-line
                   switch; bench/peers/esbulk_py.py), action dicts from
                   json.loads per line, as os-py's
  esbulk-py-bulk-bytes    the same, each line as a bytes _source
  esbulk-py-streaming     helpers.streaming_bulk on those dicts, every
                          (ok, {op: item}) iterated (as os-py-parallel's)
  esbulk-py-indexer       esbulk.Indexer.add_many, chunks of --batch dicts
  esbulk-py-indexer-bytes the same with the lines as bytes
  esbulk-go        the esbulk Go module's BulkIndexer (bench/peers/esbulk_go,
                   cgo, libesbulk linked in), driven as os-go is
  os-py-parallel   opensearch-py helpers.parallel_bulk  (bench/peers/os_py.py)
  os-py-streaming  opensearch-py helpers.streaming_bulk (one request at a time,
                   by its design)
  os-go            opensearch-go opensearchutil.BulkIndexer (bench/peers/os_go)
  limit            bench/limit: the input pre-built in memory as pre-routed
                   per-node bulk bodies, only sent: the most a client can get
  limit-full       the limit asking for the answer libesbulk asks for (every
                   item's status, result, _seq_no, _primary_term, _version):
                   what the answer's shape costs the server
Same batch for all: --batch documents per request (default 5000, libesbulk's
flush.docs; os-go's FlushBytes is computed from the average item size so
that its requests carry that many on average). Same concurrency for all: --inflight requests per node
(default 2) for libesbulk and the limit, i.e. nodes x inflight = 6 in-flight
requests in all, which is thread_count for parallel_bulk and NumWorkers for
BulkIndexer. The peers get every node's URL and spread requests over them.

Per run
-------
Rounds are interleaved: each round runs the blocks of one shape and id mode
in turn, the contenders of a block started at a place that moves from round
to round (none always first after the switch of shape) and walked with a step
that changes (A B C D, then D C B A ...: none always follows the same
neighbour), and (not in --quick) an untimed load of the block's whole data
set goes first, by a different contender each round. The default is 4
rounds, an even number: with two contenders each then runs first in a block
as often as the other. On a cluster still speeding up the first run of a
block is the slower one: over the node-and-limit pairs in bench/results
of 2026-12-04 to 2026-12-05 (counted by bench/position.py, 2026-12-06,
a0763b1), node / limit was 0.927 when node ran first (143 pairs) and 0.964
when the limit did (71); 3 rounds of two contenders, one of them first
twice, tilt the median against it. On a cluster warmed to its steady rate
the limit alone shows no such effect (2026-12-06, 7692c1d: three limit runs
a block, 2 x 3 blocks, first 1.005 / 0.988 / 1.012 of its block's mean),
so the warm-up below removes the drift and the even count balances what
is left. A run whose cluster figures could
not be read is reported (table footer, results.json
"unread_runs"), not in the medians. Each run: a fresh index (6
shards, 0 replicas, the shape's mapping), wait for green; snapshot the node
JVMs' CPU time (utime+stime from /proc/<pid>/stat; pids from _nodes/process),
_nodes/stats/transport rx/tx bytes and the write pool's rejected count; run
the contender as a subprocess and take its wall time, CPU (ru_utime+ru_stime)
and peak RSS (ru_maxrss) from os.wait4; snapshot again; refresh, _count (a
contender that loses documents is reported as such; noid may also duplicate)
and delete the index. docs/s uses the contender's own "seconds" (the timed
part: every contender has its documents in memory before the clock starts:
libesbulk, the limit and the Go ones read the file, the Python ones also
parse it into dicts, or keep the lines as bytes, for the modes that send
bytes (parsing as they went cost them 2-3 us a document inside the timed
part, 2026-12-04); the limit also finds the nodes and the index's layout
before its clock, and so does esbulk_bench: its handle deletes an _id no
document has, untimed, and reports that step's wall time as "ready_s":
16-32 ms on the warmed benchmark cluster, 50-100 ms on a cold one, 0.3-0.5%
of a run's 4-7 s, 2026-12-06; --cold puts it back inside the clock).
Untimed
warm-up loads run first (not in --quick): every block of the plan (shape and
id mode) in turn, each a whole data set, until 6M documents are in (12 runs
of 500k, 6 of 1M): the server's JIT needs them. From a cold start, the limit
program's rate rises for about 4.5M documents and then holds (2026-12-06,
7692c1d, bench/results/2026-12-06-warmup.txt; 500k sets, the three blocks
in turn: gateway ids 59k docs/s after 1.5M documents, 68k after 3M, 82-89k
from 4.5M on; orders 97k, 110k, then 129-137k). 2M documents of the
gateway shape only leave round 1 and part of round 2 on a cluster still
speeding up, and the first run of each pair pays for the drift.

--profile records every run with Java Flight Recorder on the node JVMs
(jcmd JFR.start settings=profile / JFR.stop; OUT/profile/*.jfr) and counts
the CPU samples by the thread pool that ran them (write pool, transport I/O,
HTTP I/O, merges, refresh/flush, other) and by top frame: where the server
spends its CPU with routing and without it.

Report
------
On stdout and in OUT/results.json: per contender, shape and id mode the
docs/s median/min/max over rounds, ratio to esbulk-off and to limit, client
CPU s per million docs, server CPU s per million docs, inter-node transport
bytes per doc (tx summed over nodes), write rejections, client peak RSS; a
PNG chart OUT/results.png (docs/s, server CPU per million docs); bench/micro's
client-only figures when it exists; then the speed targets, one line each,
"met" or "not met" (reported, never asserted). --sweep varies libesbulk's
flush.docs, flush.bytes, max.inflight.per.node, id.generate and compression
with node routing, interleaved with the esbulk-off baseline (a baseline run
every four variants), and writes OUT/sweep.json; there --contenders picks
variants by label ("flush.docs=*,inflight=*"). Nothing here fails on speed: the exit status is 1 only when
libesbulk or the limit program failed or lost documents, and never in
--quick; every run's raw figures and the contender's own JSON line are kept
in the JSON file, its stdout/stderr in OUT/logs/.
"""
import argparse
import fnmatch
import json
import math
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
SEED_URL = "http://127.0.0.1:19200"
NODE_URLS = ["http://127.0.0.1:19200", "http://127.0.0.1:19201", "http://127.0.0.1:19202"]
INDEX_PREFIX = "bench-h"

MAPPINGS = {
    "gateway": {"properties": {
        "timestamp": {"type": "date"},
        "field1": {"type": "keyword"}, "field2": {"type": "keyword"},
        "field3": {"type": "keyword"}, "field4": {"type": "integer"},
        "field5": {"type": "keyword"}, "field6": {"type": "float"}}},
    "orders": {"properties": {
        "order_no": {"type": "keyword"}, "user_id": {"type": "long"},
        "status": {"type": "keyword"}, "amount": {"type": "float"},
        "created_at": {"type": "date"}}},
}

# name -> (family, description)
CONTENDERS = [
    "esbulk-node", "esbulk-node-fo", "esbulk-shard", "esbulk-off", "esbulk-off-fo", "esbulk-node-none",
    "esbulk-py-bulk", "esbulk-py-bulk-bytes", "esbulk-py-streaming", "esbulk-py-indexer",
    "esbulk-py-indexer-bytes", "esbulk-go", "os-py-parallel", "os-py-streaming", "os-go", "limit",
    "limit-full",
]
# the language packages' contenders (bench/peers/esbulk_py.py, esbulk_go)
PY_MODES = {"esbulk-py-bulk": "bulk", "esbulk-py-bulk-bytes": "bulk-bytes",
            "esbulk-py-streaming": "streaming",
            "esbulk-py-indexer": "indexer", "esbulk-py-indexer-bytes": "indexer-bytes"}
BASELINE = "esbulk-off"
ROUTED = "esbulk-node"
# the cores this harness, its contenders and the cluster share (cpu_fit)
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ http ----

def http(method, path, body=None, url=None, timeout=120):
    url = url or SEED_URL
    data = None
    headers = {}
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    # The harness's own calls are retried on 429/503 (the small test nodes'
    # parent circuit breaker trips now and then under load), for up to a minute.
    deadline = time.monotonic() + 60
    delay = 0.2
    while True:
        req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read()
            return json.loads(raw) if raw else {}
        except urllib.error.HTTPError as e:
            raw = e.read()
            if e.code in (429, 503) and time.monotonic() < deadline:
                time.sleep(delay)
                delay = min(delay * 2, 5)
                continue
            raise RuntimeError("%s %s: HTTP %d %s" % (method, path, e.code, raw[:300].decode(errors="replace")))


# --------------------------------------------------------------- cluster ----

OWN_HTTP_BASE, OWN_TRANSPORT_BASE = 19240, 19340


def set_urls(http_base, nodes=3):
    global SEED_URL, NODE_URLS
    NODE_URLS = ["http://127.0.0.1:%d" % (http_base + i) for i in range(nodes)]
    SEED_URL = NODE_URLS[0]


def own_cluster_env(a):
    env = dict(os.environ)
    env.update({
        "ESBULK_CLUSTER_DIR": os.path.join(a.out, "cluster"),
        "ESBULK_OS_HTTP_BASE": str(OWN_HTTP_BASE),
        "ESBULK_OS_TRANSPORT_BASE": str(OWN_TRANSPORT_BASE),
        "ESBULK_OS_CLUSTER_NAME": "esbulk-bench",
        "ESBULK_NODE_HEAP": a.heap,
        # the test clusters stop the JIT at C1 (fast start); a benchmark
        # wants the server's normal, fully optimizing JIT
        "ESBULK_JAVA_OPTS": ("-XX:TieredStopAtLevel=4 " + a.java_opts).strip(),
    })
    return env


def ensure_cluster(a):
    """--cluster shared: the test cluster on 19200-19202 (tests/cluster/ensure.sh,
    left running). --cluster own: a cluster of its own on 19240-19242, data
    under OUT/cluster, --heap per node, full JIT; stopped at the end unless
    --keep-cluster. The shared one also holds every test's indices (hundreds
    of shards in 512 MB heaps): its parent breaker answers 429 under load."""
    if a.cluster == "shared":
        set_urls(19200)
        r = subprocess.run([os.path.join(SRC, "tests/cluster/ensure.sh"), "opensearch"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    else:
        set_urls(OWN_HTTP_BASE)
        env = own_cluster_env(a)
        script = os.path.join(SRC, "tests/cluster/opensearch.sh")
        r = subprocess.run([os.path.join(SRC, "tests/cluster/ensure.sh"), "opensearch"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0 and not a.keep_cluster:
            import atexit
            atexit.register(lambda: subprocess.run([script, "stop"], env=env, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL))
    if r.returncode != 0:
        sys.stderr.write(r.stdout)
        raise SystemExit("bench: could not start the OpenSearch cluster")
    http("GET", "/_cluster/health?wait_for_status=green&timeout=120s")


def node_pids():
    """{node name: pid} of the node JVMs, from _nodes/process (same machine)."""
    out = {}
    for n in http("GET", "/_nodes/process")["nodes"].values():
        pid = n.get("process", {}).get("id")
        if pid and os.path.exists("/proc/%d/stat" % pid):
            out[n["name"]] = pid
    if not out:  # fall back to the cluster script's pid files
        d = os.environ.get("ESBULK_CLUSTER_DIR", os.path.join(SRC, "tests/cluster/run/opensearch"))
        for f in sorted(os.listdir(os.path.join(d, "pids"))):
            with open(os.path.join(d, "pids", f)) as fh:
                out[f[:-4]] = int(fh.read().strip())
    return out


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:  # the node is gone
        return float("nan")
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def node_stats(metric, nodes):
    """_nodes/stats/METRIC with every node answering (a busy node may be left
    out of an answer: that would make the sums jump)."""
    # up to a minute: a node in a long garbage collection answers late
    for _ in range(120):
        r = http("GET", "/_nodes/stats/" + metric + "?timeout=30s")
        if len(r["nodes"]) >= nodes and not r.get("_nodes", {}).get("failed"):
            return r["nodes"].values()
        time.sleep(0.5)
    raise RuntimeError("_nodes/stats/%s: not every node answered within a minute" % metric)


def snapshot(pids):
    cpu = {name: proc_cpu(pid) for name, pid in pids.items()}
    tr = node_stats("transport", len(pids))
    tp = node_stats("thread_pool", len(pids))
    ix = node_stats("indices/indexing", len(pids))
    br = node_stats("breaker", len(pids))
    return {
        "breaker_tripped": sum(n["breakers"].get("parent", {}).get("tripped", 0) for n in br),
        "indexed": sum(n["indices"]["indexing"]["index_total"] for n in ix),
        "t": time.monotonic(),
        "cpu": cpu,
        "rx": sum(n["transport"]["rx_size_in_bytes"] for n in tr),
        "tx": sum(n["transport"]["tx_size_in_bytes"] for n in tr),
        "rejected": sum(n["thread_pool"].get("write", {}).get("rejected", 0) for n in tp),
    }


def cluster_condition():
    """What else the cluster holds: other indices' shards take heap, and a
    full heap trips the parent breaker (429s) during bulk loads."""
    h = http("GET", "/_cluster/health")
    jvm = http("GET", "/_nodes/stats/jvm,breaker")["nodes"].values()
    return {"active_shards": h["active_shards"],
            "heap_used_percent": [n["jvm"]["mem"]["heap_used_percent"] for n in jvm],
            "heap_max_mb": sorted({n["jvm"]["mem"]["heap_max_in_bytes"] >> 20 for n in jvm}),
            "breaker_tripped": sum(n["breakers"]["parent"]["tripped"] for n in jvm)}


# index.refresh_interval of each run's index; None keeps the server's
# default (1s), as the gateway test did. --refresh-interval -1 is the usual
# bulk-load setting: no segment per second, so far less merging.
REFRESH_INTERVAL = None


def create_index(name, shape):
    index = {"number_of_shards": 6, "number_of_replicas": 0}
    if REFRESH_INTERVAL is not None:
        index["refresh_interval"] = REFRESH_INTERVAL
    http("PUT", "/" + name, {"settings": {"index": index}, "mappings": MAPPINGS[shape]})
    http("GET", "/_cluster/health/%s?wait_for_status=green&timeout=60s" % name)


def delete_index(name):
    try:
        http("DELETE", "/" + name)
    except Exception as e:  # already gone
        log("bench: delete %s: %s" % (name, e))


# ------------------------------------------------------------------ data ----

def _iso(ms):
    t = time.gmtime(ms // 1000)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (t.tm_year, t.tm_mon, t.tm_mday,
                                                   t.tm_hour, t.tm_min, t.tm_sec, ms % 1000)


def gen_gateway(f, n, rng):
    import hashlib
    md5 = hashlib.md5
    rb = rng.getrandbits
    base = 1700000000000
    letters = "ABCD"
    for i in range(n):
        ms = base + i * 7 + rb(3)
        f.write('{"timestamp":"%s","field1":"%s","field2":"%s","field3":"%s",'
                '"field4":%d,"field5":"%s","field6":%.2f}\n' % (
                    _iso(ms),
                    md5(b"%x" % rb(64)).hexdigest(), md5(b"%x" % rb(64)).hexdigest(),
                    md5(b"%x" % rb(64)).hexdigest(),
                    rng.randint(1, 1000), letters[rb(2)], rng.uniform(0.1, 100.0)))


def gen_orders(f, n, rng):
    base = 1700000000000
    statuses = ("created", "paid", "shipped", "delivered", "cancelled", "refunded")
    for i in range(n):
        f.write('{"order_no":"ORD%014d","user_id":%d,"status":"%s","amount":%.2f,'
                '"created_at":"%s"}\n' % (
                    20240000000000 + i + 1, rng.randint(1, 2000000), statuses[rng.randrange(6)],
                    rng.uniform(1.0, 5000.0), _iso(base + i * 13 + rng.getrandbits(4))))


def data_file(out, shape, n):
    path = os.path.join(out, "%s-%d.ndjson" % (shape, n))
    if os.path.exists(path):
        return path
    log("bench: generating %s (%d documents)" % (path, n))
    tmp = path + ".tmp"
    rng = random.Random("libesbulk-bench-" + shape)
    with open(tmp, "w", buffering=1 << 20) as f:
        (gen_gateway if shape == "gateway" else gen_orders)(f, n, rng)
    os.rename(tmp, path)
    return path


# ------------------------------------------------------------ contenders ----

class Env:
    def __init__(self, args, builddir, python):
        self.args = args
        self.builddir = builddir
        self.python = python
        self.bin = {
            "esbulk_bench": os.path.join(builddir, "bench", "esbulk_bench"),
            "limit": os.path.join(builddir, "bench", "limit"),
            "micro": os.path.join(builddir, "bench", "micro"),
            "os_go": os.path.join(builddir, "bench", "os_go"),
            "esbulk_go": os.path.join(builddir, "bench", "esbulk_go"),
        }
        self.libesbulk = os.path.join(builddir, ".libs", "libesbulk.so")

    def have(self, prog):
        return os.access(self.bin[prog], os.X_OK)


def have_opensearchpy(python):
    return subprocess.run([python, "-c", "import opensearchpy"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def contender_cmd(env, name, index, path, ids, sets=()):
    """The command line of contender `name`, or None if its program is missing."""
    a = env.args
    conc = a.nodes * a.inflight
    ida = ["--ids"] if ids else []
    if name in PY_MODES:
        if not os.path.exists(env.libesbulk):
            return None
        # the package from the source tree, over this build's library
        return ["env", "PYTHONPATH=" + os.path.join(SRC, "python"),
                "ESBULK_LIBRARY=" + env.libesbulk, env.python,
                os.path.join(HERE, "peers", "esbulk_py.py"), "--mode", PY_MODES[name],
                "--url", SEED_URL, "--index", index, "--file", path,
                "--batch", str(a.batch), "--inflight", str(a.inflight)] + ida
    if name == "esbulk-go":
        if not env.have("esbulk_go"):
            return None
        return [env.bin["esbulk_go"], "--url", SEED_URL, "--index", index, "--file", path,
                "--batch", str(a.batch), "--inflight", str(a.inflight)] + ida
    if name.startswith("esbulk-"):
        if not env.have("esbulk_bench"):
            return None
        level = {"esbulk-node": "node", "esbulk-shard": "shard", "esbulk-off": "off",
                 "esbulk-node-none": "node", "esbulk-node-fo": "node", "esbulk-off-fo": "off"}[name]
        s = ["routing.level=" + level, "flush.docs=%d" % a.batch,
             "max.inflight.per.node=%d" % a.inflight]
        if name == "esbulk-node-none":
            s.append("id.generate=none")
        if name in ("esbulk-node-fo", "esbulk-off-fo"):
            s.append("result.failures_only=true")
        s += list(sets)
        cmd = [env.bin["esbulk_bench"], "--url", SEED_URL, "--index", index, "--file", path] + ida
        for kv in s:
            cmd += ["--set", kv]
        return cmd
    if name in ("limit", "limit-full"):
        if not env.have("limit"):
            return None
        return [env.bin["limit"], "--url", SEED_URL, "--index", index, "--file", path] + ida + [
            "--flush-docs", str(a.batch), "--inflight", str(a.inflight)] + (
                ["--answer", "full"] if name == "limit-full" else [])
    if name.startswith("os-py-"):
        if not env.have_py:
            return None
        return [env.python, os.path.join(HERE, "peers", "os_py.py"),
                "--mode", name[len("os-py-"):], "--url", ",".join(NODE_URLS),
                "--index", index, "--file", path, "--batch", str(a.batch),
                "--threads", str(conc)] + ida
    if name == "os-go":
        if not env.have("os_go"):
            return None
        return [env.bin["os_go"], "--url", ",".join(NODE_URLS), "--index", index,
                "--file", path, "--batch", str(a.batch), "--workers", str(conc)] + ida
    raise ValueError(name)


def spawn_measured(cmd, timeout, logpath):
    """Runs cmd; returns (rc, wall_s, cpu_s, maxrss_kb, stdout, stderr tail)."""
    with open(logpath + ".out", "w+b") as out, open(logpath + ".err", "w+b") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        killed = []

        def kill():
            killed.append(1)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        out.seek(0)
        err.seek(0)
        so = out.read().decode(errors="replace")
        se = err.read().decode(errors="replace")
    rc = p.returncode if not killed else "timeout"
    return rc, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, so, se[-2000:]


def parse_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


_seq = [0]


def one_run(env, pids, name, shape, ids, path, ndocs, round_no, sets=(), label=None):
    a = env.args
    _seq[0] += 1
    index = "%s-%d-%d-%s-%s" % (INDEX_PREFIX, os.getpid(), _seq[0], shape, name)
    index = index.lower()[:200]
    cmd = contender_cmd(env, name, index, path, ids, sets)
    rec = {"contender": name, "label": label or name, "shape": shape,
           "ids": "ids" if ids else "noid", "round": round_no, "sets": list(sets),
           "docs_expected": ndocs}
    create_index(index, shape)
    try:
        time.sleep(a.settle)
        pids = node_pids()
        jfrs = jfr_start(a, pids, index) if a.profile and round_no > 0 else {}
        before = snapshot(pids)
        logpath = os.path.join(a.out, "logs", index)
        rc, wall, ccpu, rss, so, se = spawn_measured(cmd, a.timeout, logpath)
        after = snapshot(pids)
        jfr_stop(pids, jfrs)
        restarted = node_pids() != pids or any(math.isnan(v) for v in after["cpu"].values())
        http("POST", "/%s/_refresh" % index)
        count = http("GET", "/%s/_count" % index)["count"]
    finally:
        delete_index(index)
    res = parse_json_line(so) or {}
    secs = res.get("seconds")
    if not isinstance(secs, (int, float)) or secs <= 0:
        secs = wall
    scpu = sum(after["cpu"][k] - before["cpu"][k] for k in before["cpu"])
    rec.update({
        # documents that are in the index per second: a contender that lost
        # documents is not credited for them
        "rc": rc, "wall_s": wall, "seconds": secs, "docs_per_s": min(count, ndocs) / secs,
        "offered_per_s": ndocs / secs,
        "client_cpu_s": ccpu, "client_maxrss_mb": rss / 1024.0,
        # the contender's own CPU from its first add to the end of its flush,
        # when it reports it (bench/esbulk_bench: cpu_s): the process's CPU
        # without reading and splitting the data file
        "client_span_cpu_s": res.get("cpu_s") if isinstance(res.get("cpu_s"), (int, float)) else None,
        "server_cpu_s": scpu,
        "server_cpu_per_node_s": {k: after["cpu"][k] - before["cpu"][k] for k in before["cpu"]},
        "transport_tx_bytes": after["tx"] - before["tx"],
        "transport_rx_bytes": after["rx"] - before["rx"],
        "write_rejected": after["rejected"] - before["rejected"],
        # 429 circuit_breaking_exception: the nodes' parent (real memory) breaker
        "breaker_tripped": after["breaker_tripped"] - before["breaker_tripped"],
        # documents indexed anywhere in the cluster meanwhile, beyond ours:
        # another user of the cluster (its CPU is then in server_cpu_s too)
        "foreign_indexed": max(0, after["indexed"] - before["indexed"] - count),
        "node_restarted": restarted,
        "count": count, "lost": max(0, ndocs - count), "extra": max(0, count - ndocs),
        "failed": res.get("failed"), "result": res,
    })
    if jfrs:
        rec["jfr"] = jfrs
    if rc != 0:
        rec["stderr_tail"] = se
    return rec


# ------------------------------------------------------------- profiles ----
# --profile: a Java Flight Recorder recording on every node JVM for each run
# (jcmd JFR.start settings=profile ... JFR.stop), then the CPU samples
# (jdk.ExecutionSample: a thread running Java code) counted by the thread pool
# that ran them: where the server spends its CPU, with and without the
# forwarding hop. jdk.NativeMethodSample is left out: it samples threads that
# sit in native code whether they burn CPU or not, and most such samples are
# idle network threads in EPoll.wait (counting them made "transport I/O" 60%
# of every run, the limit program's included, which forwards nothing).

JFR_NAME = "esbulk-bench"
THREAD_KINDS = [
    ("write pool: bulk shard operations (parse, map, Lucene, translog)", ("[write]",)),
    # OpenSearch 2.19's Netty threads are all "transport_worker": they read
    # the client's HTTP bulks and send/receive the forwarded shard bulks
    ("network I/O (client HTTP, and node to node: forwarded bulks and their answers)",
     ("[transport_worker]", "[http_server_worker]")),
    ("merges", ("Lucene Merge Thread",)),
    ("refresh and flush", ("[refresh]", "[flush]")),
]


def jfr_start(a, pids, index):
    out = {}
    d = os.path.join(a.out, "profile")
    os.makedirs(d, exist_ok=True)
    for name, pid in pids.items():
        f = os.path.join(d, "%s-%s.jfr" % (index, name))
        r = subprocess.run(["jcmd", str(pid), "JFR.start", "name=" + JFR_NAME, "settings=profile",
                            "filename=" + f], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0:
            out[name] = f
        else:
            log("bench: JFR.start on %s failed: %s" % (name, r.stdout.strip()[-200:]))
    return out


def jfr_stop(pids, jfrs):
    for name in jfrs:
        subprocess.run(["jcmd", str(pids[name]), "JFR.stop", "name=" + JFR_NAME],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def jfr_samples(path):
    """[(thread name, top frame)] of the CPU samples in one recording."""
    r = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample",
                        "--stack-depth", "1", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True)
    out, thread, want_frame = [], None, False
    for line in r.stdout.splitlines():
        t = line.strip()
        if t.startswith("sampledThread = "):
            thread = t[len("sampledThread = "):].split(" (javaThreadId", 1)[0].strip('"')
        elif t.startswith("stackTrace = ["):
            want_frame = True
        elif want_frame:
            out.append((thread or "?", t.split(" line:", 1)[0]))
            want_frame = False
    return out


def profile_summary(runs):
    """Per profiled run: the share of CPU samples per thread kind and the top
    frames, and each share times the run's server CPU per million documents."""
    out = []
    for rec in runs:
        if not rec.get("jfr"):
            continue
        samples = []
        for f in rec["jfr"].values():
            samples += jfr_samples(f)
        n = len(samples) or 1
        kinds, frames = {}, {}
        for thread, frame in samples:
            kind = next((k for k, pats in THREAD_KINDS if any(p in thread for p in pats)), "other")
            kinds[kind] = kinds.get(kind, 0) + 1
            frames[frame] = frames.get(frame, 0) + 1
        cpu_m = rec["server_cpu_s"] / rec["docs_expected"] * 1e6
        out.append({
            "label": rec["label"], "shape": rec["shape"], "ids": rec["ids"], "round": rec["round"],
            "samples": len(samples), "server_cpu_s_per_mdoc": cpu_m,
            "kinds": {k: {"share": v / n, "cpu_s_per_mdoc": v / n * cpu_m}
                      for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
            "top_frames": [{"frame": k, "share": v / n}
                           for k, v in sorted(frames.items(), key=lambda kv: -kv[1])[:12]],
        })
    return out


def profile_table(prof):
    lines = ["server CPU by thread kind (JFR samples; s per million docs = share x the run's server CPU)"]
    for p in prof:
        lines.append("%s %s %s r%d: %d samples, %.1f s server CPU per million docs" % (
            p["label"], p["shape"], p["ids"], p["round"], p["samples"], p["server_cpu_s_per_mdoc"]))
        for k, v in p["kinds"].items():
            lines.append("  %5.1f%%  %5.1f s/M  %s" % (v["share"] * 100, v["cpu_s_per_mdoc"], k))
        lines.append("  top frames: " + "; ".join("%s %.1f%%" % (f["frame"], f["share"] * 100)
                                                  for f in p["top_frames"][:6]))
    return "\n".join(lines)


# runs whose cluster figures could not be read: reported (table footer and
# results.json "unread_runs"), left out of the medians
UNREAD = []


def guarded_run(env, pids, name, shape, ids, path, ndocs, round_no, sets=(), label=None):
    """one_run, or None when the cluster's statistics could not be read
    around it: then the run is kept in UNREAD (reported, not in the figures)."""
    try:
        return one_run(env, pids, name, shape, ids, path, ndocs, round_no, sets, label)
    except RuntimeError as e:
        log("bench: %s %s r%d: cluster figures could not be read (reported, not in the "
            "medians): %s" % (label or name, shape, round_no, e))
        if round_no > 0:
            UNREAD.append({"label": label or name, "contender": name, "shape": shape,
                           "ids": "ids" if ids else "noid", "round": round_no,
                           "sets": list(sets), "error": str(e)})
        return None


def describe(rec):
    s = "%-17s %-7s %-4s r%d  %8.0f docs/s  %6.2fs  client %.2fs cpu  server %.2fs cpu" % (
        rec["label"], rec["shape"], rec["ids"], rec["round"], rec["docs_per_s"],
        rec["seconds"], rec["client_cpu_s"], rec["server_cpu_s"])
    if rec["rc"] != 0:
        s += "  EXIT %s" % rec["rc"]
    if rec["lost"]:
        s += "  LOST %d" % rec["lost"]
    if rec["breaker_tripped"]:
        s += "  (%d circuit-breaker 429s)" % rec["breaker_tripped"]
    if rec["extra"]:
        s += "  EXTRA %d" % rec["extra"]
    if rec["node_restarted"]:
        s += "  (a node restarted during the run: server figures invalid)"
    if not rec["node_restarted"] and busy(rec):
        s += "  (cluster busy: %d other docs indexed meanwhile)" % rec["foreign_indexed"]
    return s


# ---------------------------------------------------------------- report ----

def busy(rec):
    """True when the cluster did other work during the run (other indexing,
    a node restart): its server figures then include that work."""
    return rec["node_restarted"] or rec["foreign_indexed"] > max(100, rec["docs_expected"] // 100)


def summarize(runs, key=("label", "shape", "ids")):
    groups = {}
    for r in runs:
        groups.setdefault(tuple(r[k] for k in key), []).append(r)
    rows = []
    for k, rs in groups.items():
        dps = [r["docs_per_s"] for r in rs]
        n = rs[0]["docs_expected"]
        row = dict(zip(key, k))
        row.update({
            "contender": rs[0]["contender"], "sets": rs[0]["sets"], "rounds": len(rs), "docs": n,
            "docs_per_s_median": statistics.median(dps), "docs_per_s_min": min(dps),
            "docs_per_s_max": max(dps),
            "client_cpu_s_per_mdoc": statistics.median(r["client_cpu_s"] / n * 1e6 for r in rs),
            "client_span_cpu_s_per_mdoc": (
                statistics.median(r["client_span_cpu_s"] / n * 1e6 for r in rs)
                if all(isinstance(r.get("client_span_cpu_s"), (int, float)) for r in rs) else None),
            "server_cpu_s_per_mdoc": statistics.median(r["server_cpu_s"] / n * 1e6 for r in rs),
            "transport_bytes_per_doc": statistics.median(r["transport_tx_bytes"] / n for r in rs),
            "write_rejected": sum(r["write_rejected"] for r in rs),
            "breaker_tripped": sum(r["breaker_tripped"] for r in rs),
            "client_maxrss_mb": max(r["client_maxrss_mb"] for r in rs),
            "lost": sum(r["lost"] for r in rs), "extra": sum(r["extra"] for r in rs),
            "errors": sum(1 for r in rs if r["rc"] != 0),
            "busy_runs": sum(1 for r in rs if busy(r)),
            "rounds_docs_per_s": [r["docs_per_s"] for r in sorted(rs, key=lambda r: r["round"])],
        })
        # when client and cluster share this machine's cores and keep them
        # busy, docs/s is cores / (client + server CPU per doc): cpu_fit near 1
        # says the run was CPU-bound, so only CPU per document can raise it
        cpu = row["client_cpu_s_per_mdoc"] + row["server_cpu_s_per_mdoc"]
        row["cpu_bound_docs_per_s"] = CORES * 1e6 / cpu if cpu > 0 else None
        row["cpu_fit"] = (row["docs_per_s_median"] / row["cpu_bound_docs_per_s"]
                          if row["cpu_bound_docs_per_s"] else None)
        rows.append(row)
    by = {(r["label"], r["shape"], r["ids"]): r for r in rows}
    # the same round's runs, for paired ratios: rounds are interleaved, so a
    # ratio within one round cancels most of what the shared machine does
    by_round = {(r["label"], r["shape"], r["ids"], r["round"]): r for r in runs}
    for r in rows:
        for ref, field in ((BASELINE, "vs_baseline"), ("limit", "vs_limit")):
            b = by.get((ref, r["shape"], r["ids"]))
            r[field + "_of_medians"] = (r["docs_per_s_median"] / b["docs_per_s_median"]
                                        if b else None)
            pairs = []
            for x in runs:
                if tuple(x[k] for k in key) != tuple(r[k] for k in key):
                    continue
                y = by_round.get((ref, x["shape"], x["ids"], x["round"]))
                if y is not None and y["docs_per_s"] > 0:
                    pairs.append(x["docs_per_s"] / y["docs_per_s"])
            r[field + "_rounds"] = pairs
            r[field] = statistics.median(pairs) if pairs else r[field + "_of_medians"]
    order = {c: i for i, c in enumerate(CONTENDERS)}
    rows.sort(key=lambda r: (r["shape"] != "gateway", r["shape"], r["ids"],
                             order.get(r["label"], 99), r["label"]))
    return rows


LEGEND = (
    "(docs/s: median over rounds; x base: vs esbulk-off, x limit: vs limit, each the median of\n"
    " the per-round ratios (same round, shape and id mode: rounds are interleaved, so the pair\n"
    " shares the machine's state); cli/srv cpu/M: client / cluster CPU seconds per million docs;\n"
    " cpu fit: docs/s over cores / (cli + srv CPU per doc), near 1.00 when the run kept every core\n"
    " busy (then only less CPU per document can make it faster);\n"
    " xport: inter-node transport bytes sent per doc; rej: write rejections[/parent circuit-breaker\n"
    " trips]; lost: documents missing after refresh, ! = a run failed;\n"
    " * = the cluster indexed other documents during a run: another user, figures disturbed)")


def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def table(rows, title):
    hdr = ("contender", "shape", "ids", "docs/s med", "min", "max", "x base", "x limit",
           "cli cpu/M", "srv cpu/M", "cpu fit", "xport B/doc", "rej", "rss MB", "lost")
    w = (17, 7, 4, 10, 8, 8, 6, 7, 9, 9, 7, 11, 7, 7, 6)
    lines = [title, " ".join(h.rjust(x) if i > 2 else h.ljust(x) for i, (h, x) in enumerate(zip(hdr, w)))]
    for r in rows:
        cells = (r["label"], r["shape"], r["ids"], "%.0f" % r["docs_per_s_median"],
                 "%.0f" % r["docs_per_s_min"], "%.0f" % r["docs_per_s_max"],
                 fmt(r["vs_baseline"]), fmt(r["vs_limit"]),
                 "%.1f" % r["client_cpu_s_per_mdoc"],
                 "%.1f%s" % (r["server_cpu_s_per_mdoc"], "*" if r["busy_runs"] else ""),
                 fmt(r.get("cpu_fit")),
                 "%.0f" % r["transport_bytes_per_doc"],
                 "%d" % r["write_rejected"] + ("/%d" % r["breaker_tripped"] if r["breaker_tripped"] else ""),
                 "%.0f" % r["client_maxrss_mb"],
                 ("%d" % r["lost"]) + ("!" if r["errors"] else ""))
        lines.append(" ".join(c.rjust(x) if i > 2 else c.ljust(x) for i, (c, x) in enumerate(zip(cells, w))))
    return "\n".join(lines)


def targets(rows, micro):
    """The speed targets, as lines; each from the gateway shape (ids and
    noid), and node against the limit and the client's CPU share on every
    other shape too (that target holds "on every shape")."""
    by = {(r["label"], r["shape"], r["ids"]): r for r in rows}
    out = []

    def line(what, value, ok, note=""):
        if value is None:
            out.append({"target": what, "value": None, "met": None, "line": "target: %s: n/a%s" % (what, note)})
        else:
            out.append({"target": what, "value": value, "met": ok,
                        "line": "target: %s: %s — %s%s" % (what, value if isinstance(value, str) else "%.2fx" % value,
                                                       "met" if ok else "not met", note)})

    def limit_line(r, tag):
        # the median of the same-round ratios (summarize), and each of them:
        # one round's ratio varies by +-5-10% on this shared machine
        v = r.get("vs_limit") if by.get(("limit", r["shape"], r["ids"])) else None
        rounds = r.get("vs_limit_rounds") or []
        line("routed >= 0.95x the limit" + tag, v, v is not None and v >= 0.95,
             " (rounds: %s)" % " ".join("%.3f" % x for x in rounds) if v is not None and rounds else "")

    def share_lines(r, tag):
        share = r["client_cpu_s_per_mdoc"] / r["server_cpu_s_per_mdoc"] if r["server_cpu_s_per_mdoc"] else None
        if share is None:
            line("client CPU <= 5% of the cluster's" + tag, None, None)
        else:
            line("client CPU <= 5% of the cluster's" + tag, "%.1f%%" % (share * 100), share <= 0.05,
                 " (the whole process, reading the data file included)")
        span = r.get("client_span_cpu_s_per_mdoc")
        if span is not None and r["server_cpu_s_per_mdoc"]:
            share = span / r["server_cpu_s_per_mdoc"]
            line("client CPU <= 5% of the cluster's" + tag, "%.1f%%" % (share * 100), share <= 0.05,
                 " (first add to the end of the flush: the library's work)")

    for ids in ("ids", "noid"):
        r = by.get((ROUTED, "gateway", ids))
        if r is None:
            continue
        tag = " (gateway, %s)" % ids

        def ratio(other, mine=ROUTED):
            # the median of the per-round ratios (summarize), as the table shows
            me = by.get((mine, "gateway", ids))
            if me is None:
                return None
            if mine == ROUTED and other == BASELINE:
                return me["vs_baseline"]
            o = by.get((other, "gateway", ids))
            if o is None:
                return None
            pairs = [a / b for a, b in zip(me["rounds_docs_per_s"], o["rounds_docs_per_s"]) if b > 0]
            return statistics.median(pairs) if pairs else None
        v = ratio(BASELINE)
        line("routed >= 1.3x baseline docs/s" + tag, v, v is not None and v >= 1.3)
        b = by.get((BASELINE, "gateway", ids))
        if b:
            v = r["server_cpu_s_per_mdoc"] / b["server_cpu_s_per_mdoc"]
            line("routed server CPU/doc < baseline" + tag, v, v < 1.0)
        # the same comparison when both ask for the short answer
        v = ratio("esbulk-off-fo", mine="esbulk-node-fo")
        if v is not None:
            line("routed >= 1.3x baseline docs/s, both result.failures_only" + tag, v,
                 v is not None and v >= 1.3)
        v = ratio("os-py-parallel")
        line("routed >= 2x opensearch-py parallel_bulk" + tag, v, v is not None and v >= 2.0)
        v = ratio("os-go")
        line("routed >= 1.3x opensearch-go BulkIndexer" + tag, v, v is not None and v >= 1.3)
        limit_line(r, tag)
        # the language packages' targets (Python, Go)
        for mine, vs_c in (("esbulk-py-bulk", 0.9), ("esbulk-py-indexer", 0.9),
                           ("esbulk-py-bulk-bytes", 0.97), ("esbulk-py-indexer-bytes", 0.97)):
            v = ratio(ROUTED, mine=mine)
            if v is None:
                continue
            line("%s >= %.2fx the C library's docs/s%s" % (mine, vs_c, tag), v, v >= vs_c)
            v = ratio("os-py-parallel", mine=mine)
            line("%s >= 2x opensearch-py parallel_bulk%s" % (mine, tag), v,
                 v is not None and v >= 2.0)
            me, o = by.get((mine, "gateway", ids)), by.get(("os-py-parallel", "gateway", ids))
            if me and o and o["client_cpu_s_per_mdoc"]:
                v = me["client_cpu_s_per_mdoc"] / o["client_cpu_s_per_mdoc"]
                line("%s client CPU/doc <= 1/3 of parallel_bulk's%s" % (mine, tag), v, v <= 1 / 3.0)
        v = ratio(ROUTED, mine="esbulk-go")
        if v is not None:
            line("esbulk-go >= 0.95x the C library's docs/s" + tag, v, v >= 0.95)
            v = ratio("os-go", mine="esbulk-go")
            line("esbulk-go >= 1.3x opensearch-go BulkIndexer" + tag, v, v is not None and v >= 1.3)
            me, o = by.get(("esbulk-go", "gateway", ids)), by.get(("os-go", "gateway", ids))
            if me and o and o["client_cpu_s_per_mdoc"]:
                v = me["client_cpu_s_per_mdoc"] / o["client_cpu_s_per_mdoc"]
                line("esbulk-go client CPU/doc < opensearch-go's" + tag, v, v < 1.0)
        share_lines(r, tag)
    for r in rows:
        if r["label"] == ROUTED and r["shape"] != "gateway":
            tag = " (%s, %s)" % (r["shape"], r["ids"])
            limit_line(r, tag)
            share_lines(r, tag)
    m = micro if isinstance(micro, dict) else {}
    eng = m.get("engine_null_sink") if isinstance(m.get("engine_null_sink"), dict) else {}
    warm = m.get("engine_null_sink_warm") if isinstance(m.get("engine_null_sink_warm"), dict) else {}
    brs = m.get("build_route_serialize_ns_per_doc")
    what = "client-side cost <= 150 ns per 200-byte document (route+buffer+serialize, no network)"
    if isinstance(brs, (int, float)):
        line(what, "%.0f ns" % brs, brs <= 150)
    else:
        line(what, None, None, " (no bench/micro figure)")
    # the whole public path (esbulk_add to the flushed answer, every thread's
    # CPU) has targets of its own: <= 400 ns, and <= 3.5x the part above
    for handle, e in (("a new handle", eng), ("a warm handle", warm)):
        ns = e.get("cpu_ns_per_doc")
        if not isinstance(ns, (int, float)):
            if handle == "a new handle":
                line("esbulk_add..flush to the null sink <= 400 ns CPU per document", None, None,
                     " (no bench/micro figure)")
            continue
        line("esbulk_add..flush to the null sink <= 400 ns CPU per document (%s)" % handle,
             "%.0f ns" % ns, ns <= 400)
        if isinstance(brs, (int, float)) and brs > 0:
            v = ns / brs
            line("the same <= 3.5x route+buffer+serialize (%s)" % handle, v, v <= 3.5)
    return out


def chart(rows, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("bench: matplotlib missing, no chart")
        return False
    labels = ["%s\n%s/%s" % (r["label"], r["shape"], r["ids"]) for r in rows]
    colors = []
    for r in rows:
        c = r["label"]
        colors.append("#1f77b4" if c == ROUTED else "#6baed6" if c.startswith("esbulk-node") or c == "esbulk-shard"
                      else "#7f7f7f" if c == BASELINE else "#bdbdbd" if c.startswith(BASELINE)
                      else "#2ca02c" if c == "limit"
                      else "#ff7f0e" if c.startswith("os-py") else "#d62728" if c == "os-go" else "#9467bd")
    x = range(len(rows))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(8, 0.75 * len(rows) + 2), 9), sharex=True)
    med = [r["docs_per_s_median"] for r in rows]
    err = [[m - r["docs_per_s_min"] for m, r in zip(med, rows)],
           [r["docs_per_s_max"] - m for m, r in zip(med, rows)]]
    ax1.bar(x, med, yerr=err, color=colors, capsize=3)
    ax1.set_ylabel("documents/s (median, min-max)")
    ax1.set_title(title.replace(": ", ":\n", 1), fontsize=10)
    ax1.grid(axis="y", alpha=0.3)
    bars = ax2.bar(x, [r["server_cpu_s_per_mdoc"] for r in rows], color=colors)
    for b, r in zip(bars, rows):
        if r.get("busy_runs"):
            b.set_hatch("//")  # the cluster did other work meanwhile
    ax2.set_ylabel("server CPU s per million docs\n(hatched: cluster busy with other work)")
    ax2.grid(axis="y", alpha=0.3)
    ax2.set_xticks(list(x))
    ax2.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def run_micro(env):
    if not env.have("micro"):
        return None
    cmd = [env.bin["micro"]]
    if env.args.quick:
        cmd += ["--docs", "100000"]
    sink = os.path.join(env.builddir, "bench", "nullsink")
    if os.access(sink, os.X_OK):
        cmd += ["--nullsink", sink]
    try:
        # --warm: the engine passes again on handles that took the documents
        # once first (a long run's cost, without faulting the buffer in)
        r = subprocess.run(cmd + ["--warm"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=600, cwd=env.args.out)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    j = parse_json_line(r.stdout)
    if r.returncode != 0 or j is None:
        return {"error": "exit %s" % r.returncode, "stderr": r.stderr[-500:]}
    # again against a null sink of 3 nodes: routing.level=node then keeps one
    # destination per node, as on the benchmark's cluster
    try:
        r = subprocess.run(cmd + ["--sink-nodes", "3"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=600, cwd=env.args.out)
        j3 = parse_json_line(r.stdout)
        if r.returncode == 0 and j3 is not None and "engine_null_sink" in j3:
            j["engine_null_sink_3nodes"] = j3["engine_null_sink"]
    except subprocess.TimeoutExpired:
        pass
    return j


# ------------------------------------------------------------------ main ----

def setup_and_reexec(args):
    """Runs bench/setup.sh and re-executes under the venv's python."""
    if os.environ.get("ESBULK_BENCH_SETUP_DONE") != "1" and not args.no_setup:
        r = subprocess.run([os.path.join(HERE, "setup.sh"), "--print-python", args.builddir],
                           stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise SystemExit("bench: bench/setup.sh failed")
        py = r.stdout.strip().splitlines()[-1]
        os.environ["ESBULK_BENCH_SETUP_DONE"] = "1"
        os.environ["ESBULK_BENCH_PYTHON"] = py
        venv = os.path.dirname(os.path.dirname(os.path.abspath(py)))
        if os.path.abspath(sys.prefix) != venv and os.access(py, os.X_OK):
            os.execv(py, [py] + sys.argv)
    return os.environ.get("ESBULK_BENCH_PYTHON", sys.executable)


def parse_args(argv):
    ap = argparse.ArgumentParser(description="libesbulk benchmark (see the top of bench/run.py)")
    ap.add_argument("--quick", action="store_true", help="~20k docs, 1 round, gateway shape (CI)")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--docs", type=int, help="documents per data set")
    ap.add_argument("--out", help="output dir (default BUILDDIR/bench-out)")
    ap.add_argument("--builddir", default=os.environ.get("ESBULK_BUILDDIR", SRC),
                    help="where bench/esbulk_bench, limit, micro, os_go are (default: the source tree)")
    ap.add_argument("--contenders", help="comma-separated names or patterns (esbulk-*, os-py-parallel, ...)")
    ap.add_argument("--shapes", help="comma-separated: gateway,orders")
    ap.add_argument("--ids", choices=("ids", "noid", "both"),
                    help="id modes (default: gateway both, orders ids)")
    ap.add_argument("--batch", type=int, default=5000,
                    help="documents per bulk request (all; default: libesbulk's flush.docs)")
    ap.add_argument("--inflight", type=int, default=2, help="in-flight requests per node (all: x nodes)")
    ap.add_argument("--sweep", action="store_true", help="sweep libesbulk's settings instead")
    ap.add_argument("--cluster", choices=("shared", "own"), default="shared",
                    help="shared: the test cluster on 19200 (default); own: start one on 19240 for the run")
    ap.add_argument("--heap", default="2g",
                    help="--cluster own: heap per node (default 2g: with 1g, the parent circuit breaker "
                         "tripped and a node stopped answering statistics during 1M-document runs)")
    ap.add_argument("--java-opts", default="", help="--cluster own: extra JVM flags")
    ap.add_argument("--keep-cluster", action="store_true", help="--cluster own: leave it running")
    ap.add_argument("--refresh-interval", metavar="T",
                    help="index.refresh_interval of every run's index (default: the server's, 1s; "
                         "-1: no periodic refresh, the usual bulk-load setting)")
    ap.add_argument("--settle", type=float, help="seconds of quiet before each run")
    ap.add_argument("--timeout", type=float, help="seconds allowed per run")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--no-setup", action="store_true", help="do not run bench/setup.sh")
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="record each run with Java Flight Recorder on the node JVMs and report where "
                         "the server's CPU goes, per thread pool (default contenders: esbulk-node,esbulk-off, "
                         "gateway shape with ids, 1 round)")
    ap.add_argument("--report", metavar="RESULTS_JSON",
                    help="only print the table, targets and chart of an earlier run's results.json")
    a = ap.parse_args(argv)
    a.builddir = os.path.abspath(a.builddir)
    if a.out is None:
        a.out = os.path.join(a.builddir, "bench-out")
    a.out = os.path.abspath(a.out)
    if a.profile:
        if a.contenders is None:
            a.contenders = "esbulk-node,esbulk-off"
        if a.ids is None:
            a.ids = "ids"
        if a.shapes is None:
            a.shapes = "gateway"
        if a.rounds is None:
            a.rounds = 1
        if a.docs is None:
            a.docs = 500000
    if a.rounds is None:
        a.rounds = 1 if a.quick else (2 if a.sweep else 4)
    if a.docs is None:
        a.docs = 20000 if a.quick else (200000 if a.sweep else DEFAULT_DOCS)
    if a.settle is None:
        a.settle = 0.3 if a.quick else 2.0
    if a.timeout is None:
        a.timeout = max(300.0, a.docs / 500.0)
    if a.shapes is None:
        a.shapes = "gateway" if (a.quick or a.sweep) else "gateway,orders"
    a.shapes = [s for s in a.shapes.split(",") if s]
    for s in a.shapes:
        if s not in MAPPINGS:
            ap.error("unknown shape %s" % s)
    return a


# Default data size: each contender's run lasts about 20 s or more here (3
# nodes, 2 cores: the cluster indexes ~35-55k docs/s of the gateway shape with
# the full JIT, the fastest contender included).
DEFAULT_DOCS = 1000000


def plan(a):
    """[(contender, shape, ids)] for one round, in the interleaved order."""
    pats = [p for p in (a.contenders or "*").split(",") if p]
    names = [c for c in CONTENDERS if any(fnmatch.fnmatch(c, p) for p in pats)]
    unknown = [p for p in pats if not any(fnmatch.fnmatch(c, p) for c in CONTENDERS)]
    if unknown:
        raise SystemExit("bench: unknown contender(s) %s; known: %s" % (unknown, ", ".join(CONTENDERS)))
    out = []
    for shape in a.shapes:
        if a.ids:
            modes = [True, False] if a.ids == "both" else [a.ids == "ids"]
        else:
            modes = [True, False] if shape == "gateway" else [True]
        for ids in modes:
            for c in names:
                if c == "esbulk-node-none" and ids:
                    continue
                out.append((c, shape, ids))
    return out


# Untimed documents loaded before the first recorded run: the node JVMs'
# C2 JIT needs minutes of full load before the indexing paths are compiled
# (with 150k documents, round 1 ran up to 2x slower than rounds 2 and 3;
# with 2M, 20% slower than after 4.5M, 2026-12-06). Each block of the
# plan gets its turn: each shape and id mode runs its own code.
WARMUP_DOCS = 6000000


def warm_up(env, pids, c, shape, ids, path, ndocs):
    """--sweep's warm-up: one contender, one shape, one id mode."""
    done = 0
    while done < WARMUP_DOCS:
        log("bench: warm-up (%s, %s, %d docs, not recorded)" % (c, "ids" if ids else "noid", ndocs))
        one_run(env, pids, c, shape, ids, path, ndocs, 0)
        done += ndocs


def warm_up_blocks(env, pids, items, files, ndocs):
    """The full run's warm-up: the plan's blocks in turn, the contender
    moving on each time a block comes round again, until WARMUP_DOCS
    documents are in and every block has had a run."""
    blocks = round_blocks(items, 1, 1)
    done = k = 0
    while done < WARMUP_DOCS or k < len(blocks):
        block = blocks[k % len(blocks)]
        c, shape, ids = block[(k // len(blocks)) % len(block)]
        log("bench: warm-up %d (%s, %s, %s, %d docs, not recorded)" % (
            k + 1, c, shape, "ids" if ids else "noid", ndocs))
        guarded_run(env, pids, c, shape, ids, files[shape], ndocs, 0)
        done += ndocs
        k += 1


def round_blocks(items, rnd, rounds):
    """The round's runs as blocks of one shape and id mode, in plan order;
    inside a block the contenders are rotated from round to round (by about
    n / rounds places), so that no contender always runs first or last."""
    blocks = []
    for it in items:
        if blocks and blocks[-1][0][1:] == it[1:]:
            blocks[-1].append(it)
        else:
            blocks.append([it])
    out = []
    for b in blocks:
        out.append(rotate(b, rnd, rounds))
    return out


def rotate(b, rnd, rounds):
    """Round rnd's order of b: started at a place that moves by about
    n / rounds each round (none always first or last), and walked with a
    step that changes from round to round (1, then the next step coprime
    with n, ...), so that no contender always follows the same neighbour
    (a plain rotation keeps A before B in every round)."""
    n = len(b)
    if n < 2:
        return list(b)
    steps = [s for s in range(1, n) if math.gcd(s, n) == 1]
    step = steps[(rnd - 1) % len(steps)]
    k = ((rnd - 1) * -(-n // max(rounds, 1))) % n
    return [b[(k + i * step) % n] for i in range(n)]


def warmup_pick(block, rnd):
    """The contender of a block's untimed warm-up: a different one each round
    (the first run after the warm-up no longer always follows the same one)."""
    return block[(rnd - 1) % len(block)][0]


def sweep_plan():
    """[(label, sets, ids)]: the node-routing variants and the baseline."""
    v = []
    for d in (500, 1000, 2000, 5000, 10000):
        v.append(("flush.docs=%d" % d, ["flush.docs=%d" % d], True))
    for b in (65536, 262144, 1048576, 4194304):
        v.append(("flush.bytes=%d" % b, ["flush.docs=1000000", "flush.bytes=%d" % b], True))
    for k in (1, 2, 4, 8):
        v.append(("inflight=%d" % k, ["max.inflight.per.node=%d" % k], True))
    for g in ("none", "time", "content"):
        v.append(("id.generate=%s" % g, ["id.generate=%s" % g], False))
    for c in ("none", "gzip"):
        v.append(("compression=%s" % c, ["compression=%s" % c], True))
    # how much the client holds: its working set shares the caches with the
    # node JVMs on the same cores
    for m in (16, 64, 256):
        v.append(("buffer.max.bytes=%dM" % m, ["buffer.max.bytes=%d" % (m << 20)], True))
    return v


def sweep_summary(runs):
    """The sweep's rows: x base is, for each run, the ratio to the baseline
    run nearest to it in time with the same id mode (baselines come every four
    variants), the median of those over rounds."""
    rows = summarize(runs)
    near = {}
    for i, r in enumerate(runs):
        if r["contender"] == BASELINE or r["docs_per_s"] <= 0:
            continue
        js = [j for j, b in enumerate(runs) if b["contender"] == BASELINE and b["ids"] == r["ids"]
              and b["docs_per_s"] > 0]
        if js:
            j = min(js, key=lambda j: abs(j - i))
            near.setdefault((r["label"], r["ids"]), []).append(r["docs_per_s"] / runs[j]["docs_per_s"])
    base = {}
    for ids in ("ids", "noid"):
        v = [r["docs_per_s"] for r in runs if r["contender"] == BASELINE and r["ids"] == ids]
        if v:
            base[ids] = statistics.median(v)
    for r in rows:
        pairs = near.get((r["label"], r["ids"]))
        if pairs:
            r["vs_baseline"] = statistics.median(pairs)
            r["vs_baseline_rounds"] = pairs
        else:
            r["vs_baseline"] = r["docs_per_s_median"] / base[r["ids"]] if r["ids"] in base else None
        r["vs_limit"] = None
    first = {}
    for i, r in enumerate(runs):
        first.setdefault(r["label"], i)
    rows.sort(key=lambda r: (not r["label"].startswith("baseline"), first[r["label"]]))
    return rows


def report_only(a):
    """--report FILE: the table, targets and chart again from a results.json
    (its raw runs), with no cluster and nothing run."""
    with open(a.report) as f:
        doc = json.load(f)
    runs, micro = doc.get("runs") or [], doc.get("micro")
    if doc.get("kind") == "sweep":
        rows = sweep_summary(runs)
        print(table(rows, "libesbulk sweep (from %s)" % a.report))
        print(LEGEND)
        return 0
    rows = summarize(runs)
    tg = targets(rows, micro)
    title = "libesbulk benchmark (from %s)" % a.report
    print(table(rows, title))
    print(LEGEND)
    for t in tg:
        print(t["line"])
    # a --profile run's recordings, counted again (they stay in OUT/profile)
    if any(r.get("jfr") and all(os.path.exists(f) for f in r["jfr"].values()) for r in runs):
        print(profile_table(profile_summary(runs)))
    chart(rows, os.path.join(os.path.dirname(os.path.abspath(a.report)), "results.png"), title)
    return 0


def main(argv):
    global REFRESH_INTERVAL
    a = parse_args(argv)
    REFRESH_INTERVAL = a.refresh_interval
    python = setup_and_reexec(a)
    if a.report:
        return report_only(a)
    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    env = Env(a, a.builddir, python)
    env.have_py = have_opensearchpy(python)
    ensure_cluster(a)
    pids = node_pids()
    a.nodes = len(pids)
    a.cluster_state = cluster_condition()
    log("bench: cluster holds %(active_shards)d shards; heap used %(heap_used_percent)s%% of %(heap_max_mb)s MB "
        "per node; parent breaker tripped %(breaker_tripped)d times so far" % a.cluster_state)
    log("bench: cluster of %d nodes (JVM pids %s); batch %d docs, %d in flight per node = %d in all" % (
        a.nodes, ",".join(str(p) for p in pids.values()), a.batch, a.inflight, a.nodes * a.inflight))

    files = {s: data_file(a.out, s, a.docs) for s in a.shapes}
    t_start = time.time()
    missing = {}
    if a.sweep:
        if not env.have("esbulk_bench"):
            raise SystemExit("bench: --sweep needs bench/esbulk_bench in %s (make bench-programs)" % a.builddir)
        items = []
        variants = sweep_plan()
        if a.contenders:
            # --contenders picks variants by label here ("flush.docs=*,inflight=*")
            pats = [p for p in a.contenders.split(",") if p]
            variants = [v for v in variants if any(fnmatch.fnmatch(v[0], p) for p in pats)]
            if not variants:
                raise SystemExit("bench: no sweep variant matches %s; known: %s" % (
                    a.contenders, ", ".join(v[0] for v in sweep_plan())))
        for i, (label, sets, ids) in enumerate(variants):
            if i % 4 == 0:
                items.append(("baseline esbulk-off", BASELINE, [], True))
            items.append((label, ROUTED, sets, ids))
        items.append(("baseline esbulk-off", BASELINE, [], True))
        items.append(("baseline esbulk-off noid", BASELINE, [], False))
        if not a.no_warmup and not a.quick:
            for ids in (True, False):
                warm_up(env, pids, BASELINE, "gateway", ids, files["gateway"], a.docs)
        runs = []
        for rnd in range(1, a.rounds + 1):
            for label, c, sets, ids in items:
                rec = guarded_run(env, pids, c, "gateway", ids, files["gateway"], a.docs, rnd, sets, label)
                if rec is None:
                    continue
                runs.append(rec)
                log("bench: " + describe(rec))
        rows = sweep_summary(runs)
        print(table(rows, "libesbulk sweep: node routing, gateway shape, %d docs, %d rounds "
                          "(x base = vs the nearest esbulk-off run, same id mode; median over rounds)"
                          % (a.docs, a.rounds)))
        doc = {"kind": "sweep", "config": config_doc(a), "rows": rows, "runs": runs}
        with open(os.path.join(a.out, "sweep.json"), "w") as f:
            json.dump(doc, f, indent=1)
        log("bench: wrote %s" % os.path.join(a.out, "sweep.json"))
        return exit_status(a, runs)

    items = []
    for c, shape, ids in plan(a):
        cmd = contender_cmd(env, c, "x", "x", ids)
        if cmd is None:
            missing[c] = {"esbulk": "bench/esbulk_bench (make bench-programs)", "limit": "bench/limit (make bench-programs)",
                          "os-py": "opensearch-py in %s" % python, "os-go": "bench/os_go (bench/setup.sh)",
                          "esbulk-py": "the build's .libs/libesbulk.so (make)",
                          "esbulk-go": "bench/esbulk_go (bench/setup.sh)"}[
                              "esbulk-py" if c in PY_MODES else c if c == "esbulk-go" else
                              "esbulk" if c.startswith("esbulk") else "os-py" if c.startswith("os-py") else
                              "limit" if c.startswith("limit") else c]
            continue
        items.append((c, shape, ids))
    for c, why in missing.items():
        log("bench: contender %s missing: %s" % (c, why))
    if not items:
        raise SystemExit("bench: no contender can run")

    if not a.no_warmup and not a.quick:
        warm_up_blocks(env, pids, items, files, a.docs)

    runs = []
    for rnd in range(1, a.rounds + 1):
        for block in round_blocks(items, rnd, a.rounds):
            c0, shape, ids = block[0]
            if not a.no_warmup and not a.quick:
                # untimed, the block's whole data set (the contenders read a
                # file; none takes a count): the JIT re-adapts after the
                # other shape's block, and the block's first run paid for it
                # (10-25% slower than the same work second in the block,
                # 2026-12-03, bench/results/2026-12-03-results.json)
                log("bench: block warm-up (%s, %s, %d docs, not recorded)" % (
                    shape, "ids" if ids else "noid", a.docs))
                guarded_run(env, pids, warmup_pick(block, rnd),
                            shape, ids, files[shape], a.docs, 0)
            for c, shape, ids in block:
                rec = guarded_run(env, pids, c, shape, ids, files[shape], a.docs, rnd)
                if rec is None:
                    continue
                runs.append(rec)
                log("bench: " + describe(rec))
        write_results(a, runs, None, None, missing, t_start, partial=True)

    micro = None if a.no_micro else run_micro(env)
    rows = summarize(runs)
    tg = targets(rows, micro)
    title = "libesbulk benchmark: %d docs per set, %d round(s), batch %d, %d in flight (%d nodes x %d)" % (
        a.docs, a.rounds, a.batch, a.nodes * a.inflight, a.nodes, a.inflight)
    print(table(rows, title))
    print(LEGEND)
    if missing:
        print("missing contenders: " + ", ".join("%s (%s)" % kv for kv in missing.items()))
    if UNREAD:
        print("runs whose cluster figures could not be read (not in the medians): " + "; ".join(
            "%s %s %s r%d (%s)" % (u["label"], u["shape"], u["ids"], u["round"], u["error"])
            for u in UNREAD))
    if micro is not None:
        m, e = micro, micro.get("engine_null_sink") or {}
        if "build_route_serialize_ns_per_doc" in m:
            print("bench/micro (client only, %s docs of %s bytes): route+buffer+serialize %.0f ns/doc CPU "
                  "(%.0f docs/s per core); esbulk_add..flush to the null sink: %s docs/s, %s ns CPU/doc" % (
                      m.get("docs"), m.get("doc_bytes_avg"), m["build_route_serialize_ns_per_doc"],
                      m.get("docs_per_s_per_core", 0), e.get("docs_per_s", "-"), e.get("cpu_ns_per_doc", "-")))
            ew = m.get("engine_null_sink_warm") or {}
            if ew:
                print("bench/micro, handles that took the documents once first: %s ns CPU/doc "
                      "(%s page faults, against %s cold)" % (
                          ew.get("cpu_ns_per_doc", "-"), ew.get("minor_faults", "-"),
                          e.get("minor_faults", "-")))
            e3 = m.get("engine_null_sink_3nodes") or {}
            if e3:
                print("bench/micro, a null sink of 3 nodes (one destination per node): %s docs/s, "
                      "%s ns CPU/doc" % (e3.get("docs_per_s", "-"), e3.get("cpu_ns_per_doc", "-")))
        else:
            print("bench/micro: " + json.dumps(micro))
    for t in tg:
        print(t["line"])
    prof = profile_summary(runs) if a.profile else None
    if prof:
        print(profile_table(prof))
    ok_chart = chart(rows, os.path.join(a.out, "results.png"), title)
    write_results(a, runs, rows, tg, missing, t_start, micro=micro, profile=prof)
    log("bench: wrote %s%s (%.0f s)" % (os.path.join(a.out, "results.json"),
                                         " and results.png" if ok_chart else "", time.time() - t_start))
    return exit_status(a, runs)


def exit_status(a, runs):
    """Problems are always reported; the exit status is 1 only outside --quick
    and only for our own programs (libesbulk, limit) failing or losing
    documents: a peer that loses documents under load is a finding."""
    bad = [r for r in runs if r["rc"] != 0 or r["lost"]]
    for r in bad:
        log("bench: problem: " + describe(r) + ("\n  " + r["stderr_tail"].strip()[-400:].replace("\n", "\n  ")
                                               if r.get("stderr_tail") else ""))
    ours = [r for r in bad if (r["contender"].startswith("esbulk-") or r["contender"].startswith("limit"))
            and not reported_loss(r)]
    for r in bad:
        if reported_loss(r):
            log("bench: finding, not a failure: %s: the %d missing documents were each reported "
                "failed or possibly indexed (the cluster refused them until the retries ran out)"
                % (r["label"], r["lost"]))
    return 1 if ours and not a.quick else 0


def reported_loss(r):
    """A libesbulk run that lost documents but reported every one of them
    (FAILED or POSSIBLY, exit status 1, nothing indexed twice): the
    library's promise is a result for every document, not that an overloaded
    cluster takes them all."""
    res = r.get("result") if isinstance(r.get("result"), dict) else {}
    told = (res.get("failed") or 0) + (res.get("possibly") or 0)
    return (r["contender"].startswith("esbulk-") and r["rc"] == 1 and not r["extra"]
            and 0 < r["lost"] <= told and res.get("not_added", 0) == 0)


def config_doc(a):
    return {"docs": a.docs, "rounds": a.rounds, "batch": a.batch, "inflight_per_node": a.inflight,
            "nodes": a.nodes, "concurrency": a.nodes * a.inflight, "shapes": a.shapes,
            "quick": a.quick, "cpus": os.cpu_count(), "host": platform.node(),
            "python": platform.python_version(), "builddir": a.builddir,
            "cluster": a.cluster, "seed_url": SEED_URL,
            "heap": a.heap if a.cluster == "own" else "1g (test cluster)",
            "refresh_interval": a.refresh_interval or "server default (1s)",
            "cluster_at_start": getattr(a, "cluster_state", None)}


def write_results(a, runs, rows, tg, missing, t_start, micro=None, partial=False, profile=None):
    doc = {"kind": "bench", "partial": partial, "started": t_start, "config": config_doc(a),
           "missing": missing, "rows": rows, "targets": tg, "micro": micro, "runs": runs,
           "unread_runs": UNREAD}
    if profile is not None:
        doc["profile"] = profile
    tmp = os.path.join(a.out, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.rename(tmp, os.path.join(a.out, "results.json"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
