"""Shared pieces of esbulk-kafka's end-to-end tests and benchmark.

The real broker (tests/kafka/kafka.sh, 127.0.0.1:19092) through
confluent-kafka: topics, a numbered producer, committed offsets, partition
ends, the dead-letter topic; the real cluster through plain HTTP (urllib);
the members (esbulk-kafka processes) and their stats lines.
"""
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ.get("ESBULK_KAFKA_BOOTSTRAP", "127.0.0.1:19092")


class Failure(Exception):
    """A check that cannot go on (the run stops, cleanly)."""


def log(msg):
    print("# %s %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


# ------------------------------------------------------------------ broker --

def admin():
    return AdminClient({"bootstrap.servers": BOOTSTRAP, "log_level": 4})


def create_topic(name, partitions, timeout=60):
    # the client must outlive its futures (a destroyed handle fails them)
    c = admin()
    fs = c.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)],
                         operation_timeout=timeout, request_timeout=timeout)
    for f in fs.values():
        f.result(timeout)
    # metadata of a new topic reaches the broker's cache a little later
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = c.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions and \
                all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.2)
    raise Failure("topic %s: %d partitions not ready in %ss" % (name, partitions, timeout))


def delete_topics(names):
    names = [n for n in names if n]
    if not names:
        return
    c = admin()
    try:
        for f in c.delete_topics(names, operation_timeout=30).values():
            try:
                f.result(30)
            except Exception:
                pass
    except Exception:
        pass


def delete_group(group):
    c = admin()
    try:
        for f in c.delete_consumer_groups([group], request_timeout=30).values():
            try:
                f.result(30)
            except Exception:
                pass
    except Exception:
        pass


def _probe(group="esbulk-kafka-probe"):
    # a consumer that never subscribes: it only asks (OffsetFetch,
    # ListOffsets), it joins no group
    return Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group,
                     "enable.auto.commit": False, "enable.partition.eof": False})


class Offsets:
    """Committed offsets of a group and partition ends, read from the broker."""

    def __init__(self, group, topic, partitions):
        self.topic = topic
        self.partitions = partitions
        self.c = _probe(group)

    def committed(self, timeout=30):
        """{partition: committed offset} (-1 when none). Retries what the
        broker calls passing (coordinator loading or moving) within timeout."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                tps = self.c.committed([TopicPartition(self.topic, p)
                                        for p in range(self.partitions)], timeout=10)
                break
            except KafkaException as e:
                if time.monotonic() > deadline or not e.args[0].retriable() and \
                        e.args[0].code() not in (KafkaError.NOT_COORDINATOR,
                                                 KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                                 KafkaError.COORDINATOR_NOT_AVAILABLE):
                    raise Failure("committed offsets of %s: %s" % (self.topic, e))
                time.sleep(0.2)
        out = {}
        for tp in tps:
            if tp.error is not None:
                raise Failure("committed(%s/%d): %s" % (tp.topic, tp.partition, tp.error))
            out[tp.partition] = tp.offset if tp.offset >= 0 else -1
        return out

    def ends(self, timeout=10):
        return {p: self.c.get_watermark_offsets(TopicPartition(self.topic, p),
                                                timeout=timeout, cached=False)[1]
                for p in range(self.partitions)}

    def close(self):
        self.c.close()


def group_committed(group, topic, partitions):
    o = Offsets(group, topic, partitions)
    try:
        return o.committed()
    finally:
        o.close()


class DeadLetters:
    """A reader of the dead-letter topic (one partition) that follows it from
    the start in a thread of its own; sync() returns what it holds once it
    has read up to the topic's end at the time of the call."""

    def __init__(self, topic):
        self.topic = topic
        self.c = _probe("esbulk-kafka-dead-letter-reader")
        self.c.assign([TopicPartition(topic, 0, 0)])
        self.got = []     # (dead letter's offset, key, value, headers)
        self.lock = threading.Lock()
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop:
            for m in self.c.consume(1000, 0.2):
                if m.error() is not None:
                    continue
                hdrs = {k: (v.decode() if v is not None else None)
                        for k, v in (m.headers() or [])}
                with self.lock:
                    self.got.append((m.offset(), m.key(), m.value(), hdrs))

    def sync(self, timeout=30):
        probe = _probe("esbulk-kafka-dead-letter-ends")
        try:
            end = probe.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10,
                                              cached=False)[1]
        finally:
            probe.close()
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                have = self.got[-1][0] + 1 if self.got else 0
                if have >= end:
                    return list(self.got)
            if time.monotonic() > deadline:
                raise Failure("dead-letter topic %s: read %d of %d in %ss"
                              % (self.topic, have, end, timeout))
            time.sleep(0.02)

    def close(self):
        self.stop = True
        self.t.join(5)
        self.c.close()


# --------------------------------------------------------------- messages ---

def message(i, partitions, bad_every, pad):
    """Message i: partition, key, value, and what it is (ok, invalid_json,
    mapping). Its offset in its partition is i // partitions when the
    producer sends them in order to a new topic. One in bad_every is bad (a
    bad_every prime to the partition count spreads them over every
    partition)."""
    p = i % partitions
    s = i // partitions
    kind = "ok"
    if bad_every and i % bad_every == bad_every // 2:
        kind = "invalid_json" if (i // bad_every) % 2 == 0 else "mapping"
    if kind == "invalid_json":
        value = '{"n":%d,"p":%d,"s":%d,"v":' % (i, p, s)
    elif kind == "mapping":
        value = '{"n":%d,"p":%d,"s":%d,"v":"not-a-number","pad":"%s"}' % (i, p, s, pad)
    else:
        value = '{"n":%d,"p":%d,"s":%d,"v":%d,"pad":"%s"}' % (i, p, s, i % 1000, pad)
    return p, str(i), value, kind


def produce(topic, n, partitions, bad_every=997, pad_bytes=60):
    """Sends messages 0..n-1 (message()) in order, idempotent; returns the
    list of the bad ones as (partition, offset, kind)."""
    pad = "x" * pad_bytes
    errors = []

    def report(err, _msg):
        if err is not None:
            errors.append(str(err))

    pr = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True,
                   "acks": "all", "linger.ms": 20, "batch.size": 1000000,
                   "queue.buffering.max.messages": 500000,
                   "compression.type": "lz4"})
    bad = []
    for i in range(n):
        p, key, value, kind = message(i, partitions, bad_every, pad)
        if kind != "ok":
            bad.append((p, i // partitions, kind))
        while True:
            try:
                pr.produce(topic, value=value.encode(), key=key.encode(), partition=p,
                           on_delivery=report)
                break
            except BufferError:
                pr.poll(0.1)
        if i % 10000 == 0:
            pr.poll(0)
    left = pr.flush(120)
    if left or errors:
        raise Failure("producing to %s: %d undelivered, errors: %s" % (topic, left, errors[:3]))
    return bad


def expected_ends(n, partitions):
    return {p: (n - p + partitions - 1) // partitions for p in range(partitions)}


# ----------------------------------------------------------------- cluster --

def http(method, url, body=None, timeout=120):
    data = None
    headers = {}
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


def create_index(url, index, shards=2, refresh="-1"):
    http("DELETE", "%s/%s" % (url, index))
    st, body = http("PUT", "%s/%s" % (url, index), {
        "settings": {"index": {"number_of_shards": shards, "number_of_replicas": 0,
                               "refresh_interval": refresh}},
        "mappings": {"dynamic": "strict", "properties": {
            "n": {"type": "long"}, "p": {"type": "integer"}, "s": {"type": "long"},
            "v": {"type": "integer"}, "pad": {"type": "keyword", "index": False}}}})
    if st != 200:
        raise Failure("creating index %s: HTTP %s %s" % (index, st, body))
    st, body = http("GET", "%s/_cluster/health/%s?wait_for_status=green&timeout=60s" % (url, index))
    if st != 200:
        raise Failure("index %s not green: %s" % (index, body))


def refresh(url, index):
    st, body = http("POST", "%s/%s/_refresh" % (url, index))
    if st != 200:
        raise Failure("refresh %s: HTTP %s %s" % (index, st, body))


def count(url, index, query=None):
    st, body = http("POST", "%s/%s/_count" % (url, index),
                    {"query": query or {"match_all": {}}})
    if st != 200:
        raise Failure("count %s: HTTP %s %s" % (index, st, body))
    return body["count"]


def per_partition_stats(url, index, partitions, below=None, from_=None):
    """{p: (docs, sum of s, max s)} over the docs of partition p whose s is
    below below[p] (or at or above from_[p]): one search, a filters
    aggregation of one bucket per partition."""
    buckets = {}
    for p in range(partitions):
        filt = [{"term": {"p": p}}]
        if below is not None:
            filt.append({"range": {"s": {"lt": max(below.get(p, 0), 0)}}})
        if from_ is not None:
            filt.append({"range": {"s": {"gte": max(from_.get(p, 0), 0)}}})
        buckets[str(p)] = {"bool": {"filter": filt}}
    st, body = http("POST", "%s/%s/_search" % (url, index), {
        "size": 0, "aggs": {"parts": {"filters": {"filters": buckets}, "aggs": {
            "sum": {"sum": {"field": "s"}}, "max": {"max": {"field": "s"}}}}}})
    if st != 200:
        raise Failure("search %s: HTTP %s %s" % (index, st, body))
    out = {}
    for k, b in body["aggregations"]["parts"]["buckets"].items():
        mx = b["max"]["value"]
        out[int(k)] = (b["doc_count"], int(b["sum"]["value"] or 0),
                       int(mx) if mx is not None else -1)
    return out


def scan_versions(url, index, page=10000):
    """Every doc as (_id, p, s, _version): a scroll in index order (_doc),
    the cheapest full read."""
    out = []
    st, body = http("POST", "%s/%s/_search?scroll=2m" % (url, index),
                    {"size": page, "_source": ["p", "s"], "version": True, "sort": ["_doc"],
                     "query": {"match_all": {}}})
    sid = None
    try:
        while True:
            if st != 200:
                raise Failure("scan %s: HTTP %s %s" % (index, st, str(body)[:300]))
            sid = body.get("_scroll_id")
            hits = body["hits"]["hits"]
            if not hits:
                return out
            for h in hits:
                out.append((h["_id"], h["_source"]["p"], h["_source"]["s"], h["_version"]))
            st, body = http("POST", "%s/_search/scroll" % url, {"scroll": "2m", "scroll_id": sid})
    finally:
        if sid:
            http("DELETE", "%s/_search/scroll" % url, {"scroll_id": [sid]})


def write_rejections(url):
    """Sum over the nodes of the write thread pool's rejected count."""
    st, body = http("GET", "%s/_nodes/stats/thread_pool" % url)
    if st != 200:
        raise Failure("node stats: HTTP %s" % st)
    return sum(n["thread_pool"].get("write", {}).get("rejected", 0)
               for n in body["nodes"].values())


# ----------------------------------------------------------------- members --

class Member:
    """One esbulk-kafka process; its stderr goes to a file, its stats lines
    ({"stats": ...}) are kept as they come."""

    def __init__(self, name, argv, workdir, env=None):
        self.name = name
        self.argv = argv
        self.err_path = os.path.join(workdir, "%s.err" % name)
        self.err = open(self.err_path, "wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.err,
                                     stderr=subprocess.PIPE, env=env)
        self.stats = []           # (monotonic time, stats dict)
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for raw in self.proc.stderr:
            self.err.write(raw)
            self.err.flush()
            line = raw.strip()
            if line.startswith(b"{") and b'"stats"' in line:
                try:
                    st = json.loads(line)["stats"]
                except (ValueError, KeyError, TypeError):
                    continue
                with self.lock:
                    self.stats.append((time.monotonic(), st))

    def last_stats(self):
        with self.lock:
            return self.stats[-1][1] if self.stats else None

    def partitions(self):
        st = self.last_stats()
        if not st:
            return set()
        return {q["partition"] for q in st.get("partitions", [])}

    def docs(self):
        st = self.last_stats()
        return st.get("docs", 0) if st else 0

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.t.join(5)
        return rc

    def kill(self):
        if self.alive():
            self.proc.kill()
        self.wait(10)

    def tail(self, n=15):
        try:
            with open(self.err_path, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join("    %s| %s" % (self.name, line) for line in lines[-n:])


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Tally:
    """The PASS/FAIL lines of a test script and its "N passed, N failed"."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("PASS: %s" % name, flush=True)
        else:
            self.failed += 1
            print("FAIL: %s%s" % (name, (" (%s)" % detail) if detail else ""), flush=True)
        return ok

    def summary(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)

    def status(self):
        """0 only when every check passed and some ran."""
        return 0 if self.failed == 0 and self.passed > 0 else 1
