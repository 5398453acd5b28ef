"""Item 429s: the tiny cluster (tests/cluster/ensure.sh opensearch-tiny: one
write thread, a write queue of one) rejects items under load; every one is
retried by the library, in Indexer and in every helper, none lost.
tests/python.test starts the cluster and sets ESBULK_TEST_TINY_URL."""
import collections
import json
import os
import urllib.error
import urllib.request
import uuid

import pytest

import esbulk
from esbulk import helpers

TINY = os.environ.get("ESBULK_TEST_TINY_URL", "").rstrip("/")
N = 4000
# small chunks, many in flight: the write queue of one overflows
CONF = {"max.inflight.per.node": 8, "retry.max": 100, "retry.backoff.ms": 20,
        "retry.backoff.max.ms": 1000, "delivery.timeout.ms": 300000}

if not TINY:
    if os.environ.get("CI") == "true":
        raise RuntimeError("ESBULK_TEST_TINY_URL is not set (tests/python.test sets it)")
    pytestmark = pytest.mark.skip(reason="ESBULK_TEST_TINY_URL not set: no tiny 429 cluster")


def http(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(TINY + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def rejected():
    st, body = http("GET", "/_nodes/stats/thread_pool")
    assert st == 200, body
    return sum(n["thread_pool"]["write"]["rejected"] for n in body["nodes"].values())


@pytest.fixture
def tiny_index(request):
    name = "pytest-bind-tiny-%s-%s" % (request.node.name.lower().replace("[", "-")
                                       .replace("]", ""), uuid.uuid4().hex[:8])
    st, body = http("PUT", "/" + name, {
        "settings": {"number_of_shards": 4, "number_of_replicas": 0},
        "mappings": {"properties": {"n": {"type": "integer"}}}})
    assert st == 200, body
    st, body = http("GET", "/_cluster/health/%s?wait_for_status=green&timeout=60s" % name)
    assert st == 200 and body["status"] == "green", body
    yield name
    http("DELETE", "/" + name)


def tiny_count(name):
    http("POST", "/%s/_refresh" % name)
    st, body = http("GET", "/%s/_count" % name)
    assert st == 200, body
    return body["count"]


def actions(index):
    for i in range(N):
        yield {"_index": index, "_id": str(i), "n": i}


@pytest.mark.parametrize("how", ["Indexer", "bulk", "streaming_bulk", "parallel_bulk"])
def test_item_429s_are_retried_none_lost(tiny_index, how):
    r0 = rejected()
    if how == "Indexer":
        seen = collections.Counter()
        bad = []

        def on_result(r):
            seen[r.id] += 1
            if not r.ok:
                bad.append(r)
        with esbulk.Indexer(TINY, on_result=on_result, flush_docs=50, **CONF) as ix:
            ix.add_actions(list(actions(tiny_index)))
            assert ix.flush(300) == 0
            st = ix.stats()
        assert not bad, [(r.status, r.reason) for r in bad[:3]]
        assert len(seen) == N and set(seen.values()) == {1}
        assert st["item_429"] + st["http_429"] > 0 and st["retried"] > 0, st
    elif how == "bulk":
        assert helpers.bulk(TINY, actions(tiny_index), chunk_size=50,
                            esbulk_conf=CONF) == (N, [])
    else:
        ids = [item["index"]["_id"] for ok, item in getattr(helpers, how)(
            TINY, actions(tiny_index), chunk_size=50, esbulk_conf=CONF) if ok]
        assert ids == [str(i) for i in range(N)]
    # the server really refused writes meanwhile (what the retries were for)
    assert rejected() > r0, "no write rejection on the tiny cluster: the test proves nothing"
    assert tiny_count(tiny_index) == N
