#!/usr/bin/env python3
"""esbulk-kafka's crash test: a consumer group of real members that are
killed, added and stopped while they index, against the real broker and a
cluster that refuses items (429) behind a proxy that breaks connections.

    crash.py --bin ESBULK_KAFKA --url PROXY_URL --check-url CLUSTER_URL
             [--messages N] [--partitions 8] [--bad-every 1000]
             [--workdir DIR] [--timeout S] [--drops N]

The run:
  1. a new topic of --partitions partitions gets --messages numbered
     messages, message i in partition i % P at offset i // P (the producer
     is idempotent and the topic new, so the offsets are known); one in
     --bad-every (997) is refused: every other one invalid JSON (a local refusal),
     the others a string where the strict mapping wants an integer (a
     mapper_parsing_exception from the cluster);
  2. members A, B, C start in one group (index through PROXY_URL, with
     discovery off so that every request passes the proxy; dead letters to a
     topic of their own);
  3. at 20 % of the documents A is SIGKILLed. Right after, the group's
     committed offsets are read (OffsetFetch) and, after a refresh, every
     message below them must be in the index or in the dead-letter topic.
     What A had indexed past its committed offsets (its partitions only,
     counted from 1.5 s after the kill every second up to 4.5 s, before the
     group's 6 s session timeout gives them to someone else: the last count
     taken while nobody else had them) is "in flight at the kill": those
     are the only messages that may be indexed twice (or dead-lettered twice);
  4. once A's partitions have moved, member D joins (a cooperative
     rebalance: what did not move keeps going);
  5. at 60 %, B gets SIGTERM: it must drain, commit and exit 0, and again
     every message below the committed offsets must be indexed or
     dead-lettered; B's partitions must give no duplicate;
  6. once the committed offsets equal the partitions' ends, C and D get
     SIGTERM and must exit 0.
Checks at the end: committed == ends; every good message indexed once under
the id {topic}-{partition}-{offset} (scan of every doc: p, s, _version); every
bad one in the dead-letter topic with its reason, status and error type and
its original topic/partition/offset, once (or twice only within A's in-flight
window); no good message dead-lettered; the number of docs written twice
(_version > 1: the server counts every write of an id; a 429'd item is not
written) at most A's in-flight count plus what the proxy's broken
connections put in doubt (each dropped request had at most --max-batch
docs); the cluster's write pool rejected items during the run (real item
429s); the proxy broke --drops connections.

Prints PASS/FAIL lines and "N passed, N failed"; exits 0 only if all passed.
Every wait is bounded; --timeout bounds the whole run (members killed, topic
and index removed on the way out).
"""
import argparse
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafkatest as kt  # noqa: E402

tally = kt.Tally()
check = tally.check


class Run:
    def __init__(self, a):
        self.a = a
        tag = "%d-%d" % (os.getpid(), int(time.time()))
        self.topic = "crash-%s" % tag
        self.dlt = "crash-%s-dead" % tag
        self.group = "crash-%s" % tag
        self.index = "kafka-crash-%s" % tag
        self.members = {}
        self.deadline = time.monotonic() + a.timeout
        self.workdir = a.workdir or tempfile.mkdtemp(prefix="kafka-crash-")
        os.makedirs(self.workdir, exist_ok=True)
        self.n = a.messages
        self.P = a.partitions
        self.ends = kt.expected_ends(self.n, self.P)
        self.windows = {}     # partition -> (lo, hi): A's in-flight window at the kill
        self.inflight = 0

    def left(self):
        return self.deadline - time.monotonic()

    def bounded(self, what):
        if self.left() <= 0:
            raise kt.Failure("run timeout (%ss) reached while %s" % (self.a.timeout, what))

    def start_member(self, name):
        argv = [self.a.bin, "-b", kt.BOOTSTRAP, "-g", self.group, "-t", self.topic,
                "-u", self.a.url, "-i", self.index, "--dead-letter-topic", self.dlt,
                "--stats-interval", "1",
                "--set", "topology.discovery=false",
                "--set", "kafka.session.timeout.ms=6000",
                "--set", "kafka.heartbeat.interval.ms=500"]
        for s in self.a.set or []:
            argv += ["--set", s]
        m = kt.Member(name, argv, self.workdir)
        self.members[name] = m
        kt.log("member %s started (pid %d)" % (name, m.proc.pid))
        return m

    def indexed_docs(self):
        return sum(m.docs() for m in self.members.values())

    def wait_progress(self, frac, what):
        goal = int(self.n * frac)
        while True:
            self.bounded(what)
            done = self.indexed_docs()
            if done >= goal:
                return done
            for name, m in self.members.items():
                if m.alive() is False and name in self.expect_alive:
                    raise kt.Failure("member %s exited (%s) while %s:\n%s"
                                     % (name, m.proc.returncode, what, m.tail()))
            time.sleep(0.05)

    def check_below_committed(self, when, committed):
        """Every message below the committed offset is in the index or in the
        dead-letter topic."""
        kt.refresh(self.a.check_url, self.index)
        idx = kt.per_partition_stats(self.a.check_url, self.index, self.P, below=committed)
        dead = {}
        for (_o, _k, _v, h) in self.dl.sync():
            if h.get("esbulk.topic") != self.topic:
                continue
            p, o = int(h["esbulk.partition"]), int(h["esbulk.offset"])
            if o < committed.get(p, -1):
                dead.setdefault(p, set()).add(o)
        bad = []
        for p in range(self.P):
            c = max(committed.get(p, -1), 0)
            have = idx[p][0] + len(dead.get(p, ()))
            if have != c:
                bad.append("partition %d: committed %d, %d indexed + %d dead letters below it"
                           % (p, c, idx[p][0], len(dead.get(p, ()))))
        check("%s: every message below the committed offsets (%d in all) is indexed or "
              "dead-lettered" % (when, sum(max(v, 0) for v in committed.values())),
              not bad, "; ".join(bad))

    def run(self):
        a = self.a
        kt.log("topic %s (%d partitions), %d messages; index %s on %s via %s"
               % (self.topic, self.P, self.n, self.index, a.check_url, a.url))
        kt.create_topic(self.topic, self.P)
        kt.create_topic(self.dlt, 1)
        kt.create_index(a.check_url, self.index)
        self.dl = kt.DeadLetters(self.dlt)
        t0 = time.monotonic()
        self.bad = kt.produce(self.topic, self.n, self.P, a.bad_every)
        offsets = kt.Offsets(self.group, self.topic, self.P)
        got_ends = offsets.ends()
        check("produced %d messages (%d bad) in %.1fs, partition ends as expected"
              % (self.n, len(self.bad), time.monotonic() - t0), got_ends == self.ends,
              "%s != %s" % (got_ends, self.ends))
        rejected0 = kt.write_rejections(a.check_url)

        t_start = time.monotonic()
        self.expect_alive = {"A", "B", "C"}
        for name in ("A", "B", "C"):
            self.start_member(name)
        # each of A, B, C has partitions (a stats line that lists some)
        while not all(self.members[x].partitions() for x in ("A", "B", "C")):
            self.bounded("waiting for A, B and C to get partitions")
            for x in ("A", "B", "C"):
                if not self.members[x].alive():
                    raise kt.Failure("member %s exited (%s) at start:\n%s"
                                     % (x, self.members[x].proc.returncode, self.members[x].tail()))
            time.sleep(0.1)

        # --- SIGKILL A
        self.wait_progress(0.2, "waiting for 20 %")
        A = self.members["A"]
        a_parts = A.partitions()
        A.signal(signal.SIGKILL)
        t_kill = time.monotonic()
        self.expect_alive.discard("A")
        committed = offsets.committed()
        kt.log("A (partitions %s) SIGKILLed; committed offsets read %.0f ms later: %s"
               % (sorted(a_parts), (time.monotonic() - t_kill) * 1000, committed))
        A.wait(10)
        self.check_below_committed("at A's SIGKILL", committed)
        # A's in-flight: what it indexed or dead-lettered past its committed
        # offsets. Its last requests may still be applied after its death
        # (sent before it, waiting in the cluster's write queue), so counted
        # again every second until 4.5 s after the kill (the session timeout
        # is 6 s), the last count taken while no one else had its partitions
        t_counted = None
        while True:
            time.sleep(max(0.0, 1.5 - (time.monotonic() - t_kill)) if t_counted is None else 1.0)
            if any(self.members[x].partitions() & a_parts for x in ("B", "C")):
                break
            kt.refresh(a.check_url, self.index)
            beyond = kt.per_partition_stats(a.check_url, self.index, self.P, from_=committed)
            dead_beyond = {}
            for (_o, _k, _v, h) in self.dl.sync():
                p, o = int(h["esbulk.partition"]), int(h["esbulk.offset"])
                if p in a_parts and o >= committed.get(p, 0):
                    dead_beyond[p] = max(dead_beyond.get(p, -1), o)
            if any(self.members[x].partitions() & a_parts for x in ("B", "C")):
                break
            t_counted = time.monotonic() - t_kill
            windows = {}
            for p in a_parts:
                lo = max(committed.get(p, 0), 0)
                windows[p] = (lo, max(beyond[p][2], dead_beyond.get(p, -1)))
            if t_counted >= 4.5:
                break
        check("A's in-flight window counted before its partitions moved (%s after the kill)"
              % ("%.1fs" % t_counted if t_counted is not None else "never"),
              t_counted is not None)
        if t_counted is None:
            raise kt.Failure("A's partitions moved before its in-flight window was counted")
        self.windows = windows
        self.inflight = sum(max(0, hi - lo + 1) for lo, hi in windows.values())
        kt.log("A's in-flight window at the kill (last counted %.1fs after it): %s, %d messages"
               % (t_counted, self.windows, self.inflight))

        # --- A's partitions move to B and C, then D joins
        while True:
            self.bounded("waiting for A's partitions to move")
            now = self.members["B"].partitions() | self.members["C"].partitions()
            if a_parts <= now:
                break
            time.sleep(0.1)
        kt.log("A's partitions moved after %.1fs" % (time.monotonic() - t_kill))
        self.expect_alive.add("D")
        D = self.start_member("D")
        while not D.partitions():
            self.bounded("waiting for D to get partitions")
            if not D.alive():
                raise kt.Failure("member D exited (%s):\n%s" % (D.proc.returncode, D.tail()))
            time.sleep(0.1)
        kt.log("D joined: partitions %s" % sorted(D.partitions()))

        # --- SIGTERM B
        self.wait_progress(0.6, "waiting for 60 %")
        B = self.members["B"]
        b_parts = B.partitions()
        self.expect_alive.discard("B")
        B.signal(signal.SIGTERM)
        t_term = time.monotonic()
        rc = B.wait(min(60, max(1, self.left())))
        check("B (partitions %s) exits 0 after SIGTERM (%s, in %.1fs)"
              % (sorted(b_parts), rc, time.monotonic() - t_term), rc == 0, B.tail())
        if rc is None:
            B.kill()
        committed = offsets.committed()
        kt.log("committed after B's exit: %s" % committed)
        self.check_below_committed("at B's SIGTERM", committed)

        # --- the end: committed == ends, then C and D stop
        while True:
            self.bounded("waiting for the committed offsets to reach the ends")
            committed = offsets.committed()
            if committed == self.ends:
                break
            for x in ("C", "D"):
                if not self.members[x].alive():
                    raise kt.Failure("member %s exited (%s) before the end:\n%s"
                                     % (x, self.members[x].proc.returncode, self.members[x].tail()))
            time.sleep(0.25)
        t_done = time.monotonic() - t_start
        kt.log("every partition committed to its end %.1fs after the start" % t_done)
        for x in ("C", "D"):
            self.members[x].signal(signal.SIGTERM)
        for x in ("C", "D"):
            rc = self.members[x].wait(min(60, max(1, self.left())))
            check("%s exits 0 after SIGTERM (%s)" % (x, rc), rc == 0, self.members[x].tail())
        committed = offsets.committed()
        check("at the end the committed offsets equal the partitions' ends", committed == self.ends,
              "%s != %s" % (committed, self.ends))
        offsets.close()
        self.final_checks(rejected0, b_parts)
        return t_done

    def final_checks(self, rejected0, b_parts):
        a = self.a
        kt.refresh(a.check_url, self.index)
        docs = kt.scan_versions(a.check_url, self.index)
        bad = {(p, s): kind for (p, s, kind) in self.bad}
        seen = set()
        wrong_id = []
        twice = []
        for (_id, p, s, ver) in docs:
            if _id != "%s-%d-%d" % (self.topic, p, s):
                wrong_id.append(_id)
            seen.add((p, s))
            if ver > 1:
                twice.append((p, s, ver))
        good = {(i % self.P, i // self.P) for i in range(self.n)} - set(bad)
        check("every good message indexed (%d docs, %d expected)" % (len(docs), len(good)),
              seen == good and len(docs) == len(good),
              "missing %d, unexpected %d" % (len(good - seen), len(seen - good)))
        check("each doc under the id {topic}-{partition}-{offset}", not wrong_id, str(wrong_id[:3]))

        dead = self.dl.sync()
        per = {}
        malformed = []
        for (_do, key, value, h) in dead:
            try:
                p, o = int(h["esbulk.partition"]), int(h["esbulk.offset"])
            except (KeyError, TypeError, ValueError):
                malformed.append(h)
                continue
            per.setdefault((p, o), []).append((key, value, h))
            kind = bad.get((p, o))
            i = o * self.P + p
            _pp, k_exp, v_exp, _kind = kt.message(i, self.P, a.bad_every, "x" * 60)
            ok = (kind is not None and h.get("esbulk.topic") == self.topic and
                  key == k_exp.encode() and value == v_exp.encode() and
                  h.get("esbulk.reason") and h.get("esbulk.status") and
                  h.get("esbulk.error_type") and
                  (h["esbulk.error_type"] == "invalid_json") == (kind == "invalid_json") and
                  (kind != "mapping" or h["esbulk.status"] == "400"))
            if not ok:
                malformed.append({"p": p, "o": o, "kind": kind, "headers": h})
        check("every dead letter is a refused message with its key, value, reason, status, "
              "error type, topic/partition/offset (%d dead letters)" % len(dead),
              not malformed, str(malformed[:2]))
        check("every refused message is in the dead-letter topic (%d)" % len(bad),
              set(per) == set(bad), "missing %s, extra %s"
              % (sorted(set(bad) - set(per))[:5], sorted(set(per) - set(bad))[:5]))

        def in_window(p, o):
            w = self.windows.get(p)
            return w is not None and w[0] <= o <= w[1]
        dup_dead = [k for k, v in per.items() if len(v) > 1]
        check("each dead letter once (%d twice, all within A's in-flight window)" % len(dup_dead),
              all(in_window(*k) for k in dup_dead), str([k for k in dup_dead if not in_window(*k)][:5]))
        types = sorted({v[0][2].get("esbulk.error_type") for v in per.values()})
        kt.log("dead letters' error types: %s" % types)

        # documents written twice: A's in-flight window explains some; each
        # broken connection puts at most one request's documents in doubt
        outside = [t for t in twice if not in_window(t[0], t[1])]
        b_dups = [t for t in outside if t[0] in b_parts]
        drops = proxy_drops(a.proxy_log)
        allowance = drops * a.max_batch
        kt.log("docs written twice: %d (%d within A's in-flight window of %d, %d outside it; "
               "%d broken connections × at most %d docs = %d)"
               % (len(twice), len(twice) - len(outside), self.inflight, len(outside),
                  drops, a.max_batch, allowance))
        check("docs written twice (%d) no more than were in flight at the kills and the "
              "broken connections (%d + %d)" % (len(twice), self.inflight, allowance),
              len(twice) <= self.inflight + allowance and len(outside) <= allowance,
              "%d outside A's window, e.g. %s" % (len(outside), outside[:5]))
        kt.log("of them in B's partitions %s: %d (a SIGTERM drains: only broken connections "
               "can explain these)" % (sorted(b_parts), len(b_dups)))
        if a.drops:
            check("the proxy broke %d connections after sending (got %d)" % (a.drops, drops),
                  drops == a.drops)
        rejected = kt.write_rejections(a.check_url) - rejected0
        check("the cluster refused items with 429 during the run (write pool rejections: %d)"
              % rejected, rejected > 0)

    def cleanup(self):
        for m in self.members.values():
            m.kill()
        if getattr(self, "dl", None) is not None:
            self.dl.close()
        if not self.a.keep:
            kt.delete_topics([self.topic, self.dlt])
            kt.delete_group(self.group)
            kt.http("DELETE", "%s/%s" % (self.a.check_url, self.index))


def proxy_drops(path):
    if not path:
        return 0
    try:
        with open(path) as f:
            return sum(1 for line in f if " drop " in line)
    except OSError:
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--url", required=True, help="the members' cluster URL (the proxy)")
    ap.add_argument("--check-url", required=True, help="the cluster itself, for the checks")
    ap.add_argument("--messages", type=int, default=100000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--bad-every", type=int, default=997)
    ap.add_argument("--timeout", type=float, default=220)
    ap.add_argument("--workdir")
    ap.add_argument("--proxy-log", help="the fault proxy's --log (broken connections)")
    ap.add_argument("--drops", type=int, default=0, help="connections the proxy breaks")
    ap.add_argument("--max-batch", type=int, default=1000,
                    help="most documents one bulk request holds (flush.docs)")
    ap.add_argument("--set", action="append", help="extra --set for every member")
    ap.add_argument("--keep", action="store_true", help="keep topic, group and index")
    a = ap.parse_args()
    r = Run(a)
    try:
        t = r.run()
        kt.log("done in %.1fs" % t)
    except kt.Failure as e:
        check("the run", False, str(e))
        for m in r.members.values():
            print(m.tail(), flush=True)
    except Exception as e:  # a broken harness is a failure too, with its reason
        check("the run", False, "%s: %s" % (type(e).__name__, e))
        raise
    finally:
        r.cleanup()
        tally.summary()
    return tally.status()


if __name__ == "__main__":
    sys.exit(main())
