#!/usr/bin/env python3
"""Per node, how a bulk client keeps its requests in flight, from strace.

Usage
-----
    strace -f -ttt -e trace=sendto,recvfrom,connect --seccomp-bpf -o TRACE PROGRAM...
    bench/timeline.py TRACE...

For each trace, per node (the port a connection went to), between the first
bulk request and the last answer:

- the share of the time with 0, 1, 2 or 3+ requests in flight;
- from an answer to the node's next request (its first `sendto` of "POST"):
  the median and the 90th percentile, in ms;
- a request's duration, from its "POST" to its answer's first bytes.

A request is in flight on its connection from its "POST" to the first
`recvfrom` there that starts with "HTTP/1.1". Both libesbulk (bench/esbulk_bench)
and bench/limit send the request line in a `sendto` of its own, through
libcurl. strace slows every traced call, the same for both programs: compare
traces taken side by side (bench/ab.py runs a command under strace as it is).
"""
import re
import statistics
import sys

LINE = re.compile(r"(\d+) +(\d+\.\d+) (.*)")
CONNECT = re.compile(r"connect\((\d+), .*htons\((\d+)\)")
POST = re.compile(r'sendto\((\d+), +"POST ')
ANSWER = re.compile(r'recvfrom\((\d+), +"HTTP/1\.1 ')


def events(path):
    """(time, 'req' | 'ans', port, fd) in time order."""
    port, out, pending = {}, [], {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            pid, t, rest = m.group(1), float(m.group(2)), m.group(3)
            if "<unfinished ..." in rest:
                pending[pid] = (t, rest.split("<unfinished", 1)[0])
                continue
            if rest.startswith("<..."):
                if pid not in pending or "resumed>" not in rest:
                    continue
                t, head = pending.pop(pid)  # the call's start
                rest = head + rest.split("resumed>", 1)[1]
            m = CONNECT.match(rest)
            if m:
                port[int(m.group(1))] = int(m.group(2))
                continue
            for kind, rx in (("req", POST), ("ans", ANSWER)):
                m = rx.match(rest)
                if m:
                    fd = int(m.group(1))
                    out.append((t, kind, port.get(fd), fd))
    out.sort()
    bulk_fds = {fd for _, kind, _, fd in out if kind == "req"}
    return [e for e in out if e[3] in bulk_fds]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def report(path):
    ev = events(path)
    reqs = [e for e in ev if e[1] == "req"]
    if not reqs:
        print("%s: no bulk request found" % path)
        return
    t0, t1 = reqs[0][0], max(e[0] for e in ev)
    print("%s: %.3f s from the first request to the last answer, %d requests, %d answers"
          % (path, t1 - t0, len(reqs), sum(1 for e in ev if e[1] == "ans")))
    for node in sorted({e[2] for e in ev}, key=lambda p: (p is None, p)):
        busy, started, freed = set(), {}, []
        share, gaps, durs, last = [0.0] * 4, [], [], t0
        for t, kind, p, fd in ev:
            if p != node:
                continue
            share[min(len(busy), 3)] += t - last
            last = t
            if kind == "req":
                busy.add(fd)  # a request on a busy connection: its answer was not seen
                started[fd] = t
                if freed:
                    gaps.append(t - freed.pop(0))
            elif fd in busy:
                busy.discard(fd)
                freed.append(t)
                durs.append(t - started[fd])
        share[min(len(busy), 3)] += t1 - last
        total = sum(share) or 1.0
        line = "  node :%s  in flight 0/1/2/3+: %s" % (
            node, " ".join("%.1f%%" % (100 * s / total) for s in share))
        if gaps:
            line += "  | answer -> next request: median %.2f ms, p90 %.2f ms" % (
                1000 * statistics.median(gaps), 1000 * pct(gaps, 0.9))
        if durs:
            line += "  | request: median %.1f ms" % (1000 * statistics.median(durs))
        print(line)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) >= 2 else 2
    for path in sys.argv[1:]:
        report(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
