#!/usr/bin/env python3
"""esbulk-kafka's bad input, against the real broker and cluster.

    errors.py --bin ESBULK_KAFKA --url CLUSTER_URL

Each case runs the program (bounded by a timeout: a hang fails the case)
with one thing wrong, beside a topic that has messages the program could
consume, and checks: the exit status the contract gives (2 for bad usage or
configuration, 1 for a broker that cannot be reached), a message on stderr
that names what is wrong, no committed offset in the group, no document in
the index.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafkatest as kt  # noqa: E402

tally = kt.Tally()
check = tally.check


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--url", required=True)
    a = ap.parse_args()
    tag = "%d-%d" % (os.getpid(), int(time.time()))
    topic = "errors-%s" % tag
    index = "kafka-errors-%s" % tag
    groups = []
    tmp = tempfile.mkdtemp(prefix="kafka-errors-")
    kt.create_topic(topic, 2)
    kt.produce(topic, 200, 2, bad_every=0)

    def run(name, argv, want_rc, want_text, timeout=60):
        group = "errors-%s-%d" % (tag, len(groups))
        groups.append(group)
        full = [a.bin] + [x.replace("@GROUP@", group) for x in argv]
        t0 = time.monotonic()
        try:
            p = subprocess.run(full, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=timeout)
            rc, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc, err = None, (e.stderr or b"").decode(errors="replace")
        secs = time.monotonic() - t0
        check("%s: exit %s (got %s in %.1fs)" % (name, want_rc, rc, secs), rc == want_rc,
              err.strip()[-400:])
        low = err.lower()
        check("%s: stderr says %s" % (name, " / ".join(want_text)),
              all(w.lower() in low for w in want_text), err.strip()[-400:])
        committed = kt.group_committed(group, topic, 2)
        check("%s: nothing committed" % name, all(v < 0 for v in committed.values()),
              str(committed))
        st, _ = kt.http("GET", "%s/%s/_count" % (a.url, index))
        check("%s: nothing indexed" % name, st == 404, "the index exists (HTTP %s)" % st)
        return err

    base = ["-g", "@GROUP@", "-u", a.url, "-i", index]
    try:
        # a broker nobody listens on, bounded by --broker-timeout
        run("unreachable broker", ["-b", "127.0.0.1:1", "-t", topic, "--broker-timeout", "3000"]
            + base, 1, ["broker"])
        # an unknown topic (auto creation is off on the broker), beside a good one
        missing = "no-such-topic-%s" % tag
        run("unknown topic", ["-b", kt.BOOTSTRAP, "-t", topic, "-t", missing] + base, 2,
            [missing])
        # a key the program does not know, on the command line and in a file
        run("unknown key (--set)", ["-b", kt.BOOTSTRAP, "-t", topic, "--set", "flush.dogs=10"]
            + base, 2, ["flush.dogs"])
        conf = os.path.join(tmp, "job.conf")
        with open(conf, "w") as f:
            f.write("# a job\nbrokers=%s\ntopic=%s\nflush.docs=100\nno.such.key=1\n"
                    % (kt.BOOTSTRAP, topic))
        run("unknown key (config file)", ["-c", conf] + base, 2, ["no.such.key"])
        run("unknown kafka.* key", ["-b", kt.BOOTSTRAP, "-t", topic,
                                    "--set", "kafka.no.such.property=1"] + base, 2,
            ["no.such.property"])
        run("bad value of a libesbulk key", ["-b", kt.BOOTSTRAP, "-t", topic,
                                             "--set", "flush.docs=many"] + base, 2,
            ["flush.docs"])
        run("unknown option", ["-b", kt.BOOTSTRAP, "-t", topic, "--no-such-option"] + base, 2,
            ["no-such-option"])
        run("missing --group", ["-b", kt.BOOTSTRAP, "-t", topic, "-u", a.url, "-i", index], 2,
            ["group"])
        run("bad index template", ["-b", kt.BOOTSTRAP, "-t", topic, "-g", "@GROUP@", "-u", a.url,
                                   "-i", "logs-{nope}"], 2, ["{nope}"])
        run("bad --id", ["-b", kt.BOOTSTRAP, "-t", topic, "--id", "hash"] + base, 2, ["hash"])
    except kt.Failure as e:
        check("the run", False, str(e))
    finally:
        kt.delete_topics([topic])
        for g in groups:
            kt.delete_group(g)
        kt.http("DELETE", "%s/%s" % (a.url, index))
        tally.summary()
    return tally.status()


if __name__ == "__main__":
    sys.exit(main())
