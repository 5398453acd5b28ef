#!/usr/bin/env python3
"""Does the order of a pair's runs tilt their ratio? From bench/run.py
results files: for every round where contender A and contender B ran one
right after the other (same shape and id mode), A's docs/s over B's, split
by which of the two ran first.

Usage
-----
    bench/position.py [--a esbulk-node] [--b limit] RESULTS.json...

Runs with --set variants (a sweep) are left out. Prints, for "A first" and
"B first": how many pairs, the median and mean of A / B.
"""
import argparse
import json
import statistics
import sys


def pairs(path, a, b):
    """[(a_first, ratio)] from one results file."""
    with open(path) as f:
        d = json.load(f)
    runs = d["runs"] if isinstance(d, dict) and "runs" in d else d
    if not isinstance(runs, list):
        return []
    seq = [r for r in runs if isinstance(r, dict) and r.get("round", 0) >= 1
           and r.get("contender") in (a, b) and not r.get("sets")]
    out = []
    for x, y in zip(seq, seq[1:]):
        if (x["shape"], x["ids"], x["round"]) != (y["shape"], y["ids"], y["round"]) \
                or x["contender"] == y["contender"]:
            continue
        ra, rb = (x, y) if x["contender"] == a else (y, x)
        if rb["docs_per_s"] > 0:
            out.append((x is ra, ra["docs_per_s"] / rb["docs_per_s"]))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", default="esbulk-node")
    ap.add_argument("--b", default="limit")
    ap.add_argument("files", nargs="+")
    o = ap.parse_args(argv)
    got = []
    for p in o.files:
        try:
            got += pairs(p, o.a, o.b)
        except (OSError, ValueError, KeyError) as e:
            sys.stderr.write("position: %s: %s\n" % (p, e))
    for first, name in ((True, o.a), (False, o.b)):
        v = [r for f, r in got if f == first]
        if v:
            print("%s first: %d pairs, %s / %s median %.3f, mean %.3f"
                  % (name, len(v), o.a, o.b, statistics.median(v), statistics.mean(v)))
        else:
            print("%s first: no pairs" % name)
    return 0 if got else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
