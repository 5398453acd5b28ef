#!/usr/bin/env python3
"""Compares an index with what a table should give (tests/mysql_*.test).

usage: mysql_compare.py URL INDEX EXPECTED [SAMPLE]

EXPECTED: lines "_id<TAB>JSON document", as the test's SQL builds them from
the table with the server's own functions (JSON_OBJECT, CAST, TO_BASE64...),
independently of esbulk-mysql's mapping code. Every document of the index is
read (scroll); the _id sets must be equal, and every document (or SAMPLE of
them, chosen with a fixed seed) must equal its expected one field by field
(numbers compared as numbers, floats to 1e-12 relative). Prints a summary;
exits 1 on any difference.
"""
import json
import math
import random
import sys
import time
import urllib.error
import urllib.request


def req(url, body=None, method=None):
    """One call; a 429 or 503 (the shared test cluster's circuit breaker or
    search queue under load) is asked again, with a growing pause, for up to
    about two minutes: reading the index back is not what is tested."""
    data = json.dumps(body).encode() if body is not None else None
    pause = 0.2
    for attempt in range(40):
        r = urllib.request.Request(url, data=data, method=method or ("POST" if data else "GET"),
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=120) as f:
                return json.loads(f.read())
        except urllib.error.HTTPError as e:
            if e.code not in (429, 503) or attempt == 39:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 5.0)


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def main():
    url, index, path = sys.argv[1], sys.argv[2], sys.argv[3]
    sample = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    expected = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            i, doc = line.split("\t", 1)
            expected[i] = json.loads(doc)
    req(f"{url}/{index}/_refresh", method="POST")
    got = {}
    r = req(f"{url}/{index}/_search?scroll=2m", {"size": 5000, "sort": ["_doc"]})
    while r["hits"]["hits"]:
        for h in r["hits"]["hits"]:
            got[h["_id"]] = h["_source"]
        r = req(f"{url}/_search/scroll", {"scroll": "2m", "scroll_id": r["_scroll_id"]})
    try:  # 404 when the server already freed the context
        req(f"{url}/_search/scroll", {"scroll_id": r["_scroll_id"]}, method="DELETE")
    except urllib.error.HTTPError:
        pass
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    ids = sorted(set(expected) & set(got))
    if sample and sample < len(ids):
        ids = sorted(random.Random(14).sample(ids, sample))
    bad = []
    for i in ids:
        e, g = expected[i], got[i]
        fields = [k for k in sorted(set(e) | set(g)) if not same(e.get(k, "<absent>"), g.get(k, "<absent>"))]
        if fields:
            bad.append((i, fields))
    print(f"{index}: table {len(expected)} rows, index {len(got)} documents, "
          f"{len(missing)} missing, {len(extra)} extra, {len(ids)} compared field by field, "
          f"{len(bad)} different")
    for i in missing[:5]:
        print(f"  missing {i}")
    for i in extra[:5]:
        print(f"  extra {i}: {json.dumps(got[i])[:200]}")
    for i, fields in bad[:5]:
        for k in fields[:3]:
            print(f"  {i}.{k}: table {json.dumps(expected[i].get(k))[:120]} "
                  f"index {json.dumps(got[i].get(k))[:120]}")
    sys.exit(1 if missing or extra or bad or not expected else 0)


if __name__ == "__main__":
    main()
