#!/usr/bin/env python3
"""esbulk-kafka's benchmark (make bench-kafka; make bench-quick runs it small).

    kafka.py --bin ESBULK_KAFKA --esbulk ESBULK --url URL[,URL...]
             [--docs N] [--rounds R] [--batch B] [--quick] [--out FILE]
             [--only esbulk-kafka|rebalance] [--ekf-set KEY=VALUE]...

Contenders, in interleaved rounds (the order turns each round), each into a
fresh index (3 shards, no replica) from the same documents (N numbered
JSON objects of ~120 bytes, the crash test's shape, over 8 partitions):
  esbulk-kafka  one member, --exit-at-end, reading the topic from the start
                (a new group each run), every node URL;
  plain loop    bench/peers/kafka_py.py: confluent-kafka consumer +
                opensearch-py helpers.bulk, commit after each batch;
  esbulk load   the same documents from an NDJSON file (--id-field n).
All three use the same batch (B documents per bulk request) and set an _id.
Time: process start to exit, docs/s = N / time; each run's index must hold
the N documents after it. The ratios are medians of the per-round ratios
(same round: rounds are interleaved, so a ratio within one cancels most of
what a shared machine does to both).

Also measured:
  RSS           the esbulk-kafka process's peak VmRSS (sampled every 20 ms)
                in every timed run;
  first doc     time from starting esbulk-kafka on a topic with data to the
                first document searchable (refresh + count every 20 ms),
                median of R starts;
  rebalance     member A indexes alone; member B joins the group at 30 %. Both
                send through a tap (bench/kafka_tap.py: a pass-through proxy
                in front of one node that notes, as each bulk answer passes,
                how many documents of each partition it indexed): for the
                partitions that stayed with A, the documents per 100 ms
                window before the join and during the rebalance (from B's
                start to 1 s after B got partitions), and the longest run of
                windows in which none of them was indexed.

Assertions (not with --quick): esbulk-kafka >= 1.5x the plain loop and >=
0.9x esbulk load; RSS <= 100 MB; first doc <= 2 s; during the rebalance the
partitions that did not move keep being indexed (some documents, at a rate
at least a third of theirs in the 5 s before the join, and no pause longer
than 1 s or twice their longest pause in those 5 s).
Prints a table; --out writes it (with date, commit, machine) to a file.
"""
import argparse
import datetime
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "kafka"))
import kafkatest as kt  # noqa: E402
import kafka_tap  # noqa: E402

P = 8


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores, %s" % (model, os.cpu_count() or 0, platform.platform())


def commit_of(srcdir):
    try:
        out = subprocess.run(["git", "-C", srcdir, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        return out or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stop = False

    def run(self):
        while not self.stop:
            kb = kt.rss_kb(self.pid)
            if kb == 0 and self.peak:
                return
            self.peak = max(self.peak, kb)
            time.sleep(0.02)


class Bench:
    def __init__(self, a):
        self.a = a
        self.tag = "%d-%d" % (os.getpid(), int(time.time()))
        self.topic = "bench-%s" % self.tag
        self.urls = a.url.split(",")
        self.url = self.urls[0]
        self.tmp = tempfile.mkdtemp(prefix="kafka-bench-")
        self.file = os.path.join(self.tmp, "docs.ndjson")
        self.runs = 0
        self.cleanup_topics = [self.topic]
        self.lines = []

    def say(self, line):
        print(line, flush=True)
        self.lines.append(line)

    def fresh(self, what):
        self.runs += 1
        name = "kafka-bench-%s-%s-%d" % (self.tag, what, self.runs)
        kt.create_index(self.url, name, shards=3, refresh="1s")
        return name

    def ekf_argv(self, group, index, topic=None, extra=()):
        argv = [self.a.bin, "-b", kt.BOOTSTRAP, "-g", group, "-t", topic or self.topic,
                "-i", index, "-q", "--set", "flush.docs=%d" % self.a.batch]
        for u in self.urls:
            argv += ["-u", u]
        for kv in self.a.ekf_set:
            argv += ["--set", kv]
        return argv + list(extra)

    def done_check(self, index, name):
        kt.refresh(self.url, index)
        n = kt.count(self.url, index)
        if n != self.a.docs:
            raise kt.Failure("%s: %d documents in %s, %d expected" % (name, n, index, self.a.docs))
        kt.http("DELETE", "%s/%s" % (self.url, index))

    def run_ekf(self, r):
        index = self.fresh("ekf")
        group = "bench-%s-ekf-%d" % (self.tag, r)
        t0 = time.monotonic()
        p = subprocess.Popen(self.ekf_argv(group, index, extra=["--exit-at-end"]),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.tmp, "ekf-%d.err" % r), "wb"))
        rss = RssSampler(p.pid)
        rss.start()
        try:
            rc = p.wait(self.a.run_timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            raise kt.Failure("esbulk-kafka did not end within %ss" % self.a.run_timeout)
        secs = time.monotonic() - t0
        rss.stop = True
        rss.join(1)
        if rc != 0:
            raise kt.Failure("esbulk-kafka exit %s: %s" % (rc, self.tail("ekf-%d.err" % r)))
        self.done_check(index, "esbulk-kafka")
        kt.delete_group(group)
        return {"seconds": secs, "rss_kb": rss.peak}

    def run_peer(self, r):
        index = self.fresh("peer")
        group = "bench-%s-peer-%d" % (self.tag, r)
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, os.path.join(HERE, "peers", "kafka_py.py"),
                            "--brokers", kt.BOOTSTRAP, "--group", group, "--topic", self.topic,
                            "--url", ",".join(self.urls), "--index", index,
                            "--batch", str(self.a.batch)], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=self.a.run_timeout)
        secs = time.monotonic() - t0
        if p.returncode != 0:
            # its summary (documents the cluster refused, the first of them)
            # is on stdout
            raise kt.Failure("plain loop exit %s: %s%s" % (p.returncode, p.stdout.decode()[-500:],
                                                          p.stderr.decode()[-500:]))
        self.done_check(index, "plain loop")
        kt.delete_group(group)
        return {"seconds": secs}

    def run_load(self, r):
        index = self.fresh("load")
        argv = [self.a.esbulk, "load", "--index", index, "--id-field", "n",
                "--flush-docs", str(self.a.batch), self.file]
        for u in self.urls:
            argv[2:2] = ["--url", u]
        t0 = time.monotonic()
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=self.a.run_timeout)
        secs = time.monotonic() - t0
        if p.returncode != 0:
            raise kt.Failure("esbulk load exit %s: %s" % (p.returncode, p.stderr.decode()[-500:]))
        self.done_check(index, "esbulk load")
        return {"seconds": secs}

    def tail(self, name):
        try:
            with open(os.path.join(self.tmp, name), "rb") as f:
                return f.read().decode(errors="replace")[-600:]
        except OSError:
            return ""

    def first_doc(self, r):
        index = self.fresh("first")
        group = "bench-%s-first-%d" % (self.tag, r)
        t0 = time.monotonic()
        p = subprocess.Popen(self.ekf_argv(group, index), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while True:
                if time.monotonic() - t0 > 30:
                    raise kt.Failure("first doc: nothing searchable after 30 s")
                kt.http("POST", "%s/%s/_refresh" % (self.url, index))
                if kt.count(self.url, index) > 0:
                    return time.monotonic() - t0
                time.sleep(0.02)
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            kt.http("DELETE", "%s/%s" % (self.url, index))
            kt.delete_group(group)

    def rebalance(self):
        """A alone, then B joins: documents per partition per 100 ms, as the
        bulk answers pass a tap (bench/kafka_tap.py) in front of one node."""
        topic = "bench-%s-rb" % self.tag
        n = self.a.rebalance_docs
        kt.create_topic(topic, P)
        self.cleanup_topics.append(topic)
        kt.produce(topic, n, P, bad_every=0)
        index = self.fresh("rebalance")
        group = "bench-%s-rb" % self.tag
        tap = kafka_tap.Tap(self.url)
        extra = ["--exit-at-end", "--stats-interval", "1", "--set", "topology.discovery=false"]
        wd = os.path.join(self.tmp, "rb")
        os.makedirs(wd, exist_ok=True)

        def member(name):
            argv = self.ekf_argv(group, index, topic, extra)
            k = argv.index("-u")
            argv = argv[:k] + ["-u", "http://127.0.0.1:%d" % tap.port] + \
                [x for j, x in enumerate(argv[k:]) if not (x == "-u" or
                                                          (j > 0 and argv[k + j - 1] == "-u"))]
            return kt.Member(name, argv, wd)
        t0 = time.monotonic()
        A = member("A")
        b_start = b_assigned = None
        B = None
        try:
            while True:
                if time.monotonic() - t0 > self.a.run_timeout:
                    raise kt.Failure("rebalance run did not end in %ss" % self.a.run_timeout)
                total = sum(sum(per.values()) for _t, per in tap.snapshot())
                if B is None and total >= n * 0.3:
                    B = member("B")
                    b_start = time.monotonic()
                if B is not None and b_assigned is None and B.partitions():
                    b_assigned = time.monotonic()
                if total >= n or (not A.alive() and (B is None or not B.alive())):
                    break
                time.sleep(0.02)
        finally:
            for m in (A, B):
                if m is not None:
                    m.signal(signal.SIGTERM)
            for m in (A, B):
                if m is not None and m.wait(60) is None:
                    m.kill()
            tap.close()
        if b_start is None or b_assigned is None:
            raise kt.Failure("rebalance: B never got partitions (A: %s)" % A.tail())
        # what B got when it joined (later, when A ends, it gets the rest)
        moved = set()
        for _t, st in B.stats:
            moved = {q["partition"] for q in st.get("partitions", [])}
            if moved:
                break
        self.member_logs = (A.tail(40), B.tail(40))
        stayed = sorted(set(range(P)) - moved)
        kt.http("DELETE", "%s/%s" % (self.url, index))
        kt.delete_group(group)
        events = tap.snapshot()
        sizes = [sum(per.values()) for _t, per in events]
        kt.log("tap: %d bulk answers, %d docs, %d..%d per answer"
               % (len(events), sum(sizes), min(sizes or [0]), max(sizes or [0])))
        first = events[0][0] if events else b_start

        def windows(lo, hi):
            """docs of the stayed partitions in each 100 ms window of [lo, hi)"""
            k = max(1, int(round((hi - lo) / 0.1)))
            w = [0] * k
            for t, per in events:
                if lo <= t < lo + k * 0.1:
                    w[int((t - lo) / 0.1)] += sum(per.get(p, 0) for p in stayed)
            return w

        def longest_zero(w):
            best = run = 0
            for x in w:
                run = run + 1 if x == 0 else 0
                best = max(best, run)
            return best * 0.1
        # before: A's last 5 s alone (past its start): the same partitions'
        # rate and their longest pause when nothing moves (librdkafka hands
        # over fetched partitions in runs, so a few partitions alone pause
        # now and then without any rebalance)
        wb = windows(max(first, b_start - 5.0), b_start)
        wd_ = windows(b_start, b_assigned + 1.0)
        return {"moved": sorted(moved), "stayed": stayed, "join_s": b_assigned - b_start,
                "before": statistics.mean(wb) if wb else 0.0,
                "during": statistics.mean(wd_) if wd_ else 0.0,
                "before_gap": longest_zero(wb), "during_gap": longest_zero(wd_),
                "samples": len(events), "during_windows": wd_}

    def run(self):
        a = self.a
        t0 = time.monotonic()
        if a.only != "rebalance":
            kt.create_topic(self.topic, P)
            kt.produce(self.topic, a.docs, P, bad_every=0)
            with open(self.file, "w") as f:
                for i in range(a.docs):
                    f.write(kt.message(i, P, 0, "x" * 60)[2] + "\n")
        self.say("# esbulk-kafka benchmark, %s" % datetime.datetime.now(datetime.timezone.utc)
                 .strftime("%Y-%m-%d %H:%M UTC"))
        self.say("# commit %s; machine: %s" % (commit_of(os.path.join(HERE, "..")), machine()))
        self.say("# %d documents (~120 bytes, 8 partitions), batch %d, %d rounds, cluster %s"
                 % (a.docs, a.batch, a.rounds, ",".join(self.urls)))
        self.say("# produced in %.1fs; load average at the start: %s"
                 % (time.monotonic() - t0, " ".join(open("/proc/loadavg").read().split()[:3])))
        if a.ekf_set or a.only != "all":
            self.say("# only %s; esbulk-kafka with --set %s"
                     % (a.only, " --set ".join(a.ekf_set) or "(none)"))
        if a.only == "rebalance":
            return self.run_rebalance_only()
        contenders = [("esbulk-kafka", self.run_ekf), ("plain loop", self.run_peer),
                      ("esbulk load", self.run_load)]
        if a.only == "esbulk-kafka":
            contenders = contenders[:1]
        res = {name: [] for name, _ in contenders}
        for r in range(a.rounds):
            order = contenders[r % 3:] + contenders[:r % 3]
            for name, fn in order:
                out = fn(r)
                out["dps"] = a.docs / out["seconds"]
                res[name].append(out)
                self.say("%-13s r%d %9.0f docs/s  %6.2f s%s" % (
                    name, r, out["dps"], out["seconds"],
                    ("  rss %.1f MB" % (out["rss_kb"] / 1024)) if "rss_kb" in out else ""))
        med = {name: statistics.median(x["dps"] for x in v) for name, v in res.items()}
        if a.only == "esbulk-kafka":
            self.say("esbulk-kafka  median %9.0f docs/s, peak RSS %.1f MB (no goals checked)"
                     % (med["esbulk-kafka"], max(x["rss_kb"] for x in res["esbulk-kafka"]) / 1024))
            return self.write_out(True)
        vs_peer = statistics.median(res["esbulk-kafka"][r]["dps"] / res["plain loop"][r]["dps"]
                                    for r in range(a.rounds))
        vs_load = statistics.median(res["esbulk-kafka"][r]["dps"] / res["esbulk load"][r]["dps"]
                                    for r in range(a.rounds))
        rss_mb = max(x["rss_kb"] for x in res["esbulk-kafka"]) / 1024
        firsts = [self.first_doc(r) for r in range(a.rounds)]
        first = statistics.median(firsts)
        rb = self.rebalance()
        self.say("")
        for name in med:
            self.say("%-13s median %9.0f docs/s" % (name, med[name]))
        self.say("esbulk-kafka / plain loop:  %.2fx (median of per-round ratios; goal >= 1.5)"
                 % vs_peer)
        self.say("esbulk-kafka / esbulk load: %.2fx (median of per-round ratios; goal >= 0.9)"
                 % vs_load)
        self.say("esbulk-kafka peak RSS: %.1f MB (goal <= 100)" % rss_mb)
        self.say("first document searchable: median %.2f s of %s (goal <= 2 s)"
                 % (first, ", ".join("%.2f" % x for x in firsts)))
        self.say_rebalance(rb)
        ok = True
        if not a.quick:
            goals = [("esbulk-kafka >= 1.5x the plain loop", vs_peer >= 1.5),
                     ("esbulk-kafka >= 0.9x esbulk load", vs_load >= 0.9),
                     ("RSS <= 100 MB", rss_mb <= 100),
                     ("first document <= 2 s", first <= 2.0),
                     self.rebalance_goal(rb)]
            for name, good in goals:
                self.say("%s: %s" % ("PASS" if good else "FAIL", name))
                ok = ok and good
        return self.write_out(ok)

    def rebalance_goal(self, rb):
        return ("unmoved partitions indexed during the rebalance",
                bool(rb["stayed"]) and rb["during"] > 0 and
                rb["during"] >= rb["before"] / 3 and
                rb["during_gap"] <= max(1.0, 2 * rb["before_gap"]))

    def run_rebalance_only(self):
        """--only rebalance: the rebalance figure alone, its goal checked
        (not with --quick)"""
        rb = self.rebalance()
        self.say_rebalance(rb)
        ok = True
        if not self.a.quick:
            name, ok = self.rebalance_goal(rb)
            self.say("%s: %s" % ("PASS" if ok else "FAIL", name))
        return self.write_out(ok)

    def write_out(self, ok):
        if self.a.out:
            with open(self.a.out, "w") as f:
                f.write("\n".join(self.lines) + "\n")
        return 0 if ok else 1

    def say_rebalance(self, rb):
        a = self.a
        self.say("rebalance (%d docs): B joined and got partitions %s in %.2f s; partitions "
                 "that stayed with A %s: %.0f docs/100 ms before the join, %.0f during it; "
                 "longest pause of all of them %.1f s before, %.1f s during (%d bulk answers)"
                 % (a.rebalance_docs, rb["moved"], rb["join_s"], rb["stayed"], rb["before"],
                    rb["during"], rb["before_gap"], rb["during_gap"], rb["samples"]))
        self.say("  stayed partitions' docs per 100 ms during the rebalance: %s"
                 % " ".join(str(x) for x in rb["during_windows"]))

    def cleanup(self):
        kt.delete_topics(self.cleanup_topics)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--esbulk", required=True)
    ap.add_argument("--url", default="http://127.0.0.1:19200,http://127.0.0.1:19201,"
                                     "http://127.0.0.1:19202")
    ap.add_argument("--docs", type=int, default=300000)
    ap.add_argument("--rebalance-docs", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--run-timeout", type=float, default=600)
    ap.add_argument("--quick", action="store_true", help="one small round, no assertions")
    ap.add_argument("--only", choices=("all", "esbulk-kafka", "rebalance"), default="all",
                    help="esbulk-kafka: its timed runs alone (speed, RSS; no goals); "
                         "rebalance: the rebalance figure alone (its goal checked)")
    ap.add_argument("--ekf-set", action="append", default=[], metavar="KEY=VALUE",
                    help="one more --set for every esbulk-kafka run (repeatable)")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.quick:
        a.docs = min(a.docs, 20000)
        a.rounds = 1
    if not a.rebalance_docs:
        a.rebalance_docs = max(a.docs, 200000)
    b = Bench(a)
    try:
        return b.run()
    except kt.Failure as e:
        print("FAIL: %s" % e, flush=True)
        return 1
    finally:
        b.cleanup()


if __name__ == "__main__":
    sys.exit(main())
