"""streaming_bulk's own keywords: yield_action (the original action with its
result) and flush_after_seconds (results while a slow generator waits), and
results yielded while a slow generator is still being read."""
import threading
import time

import pytest

from esbulk import helpers
from conftest import count, http


def test_yield_action_gives_back_the_object_given(url, make_index):
    index = make_index()
    given = [{"_index": index, "_id": str(i), "n": "bad" if i % 7 == 3 else i}
             for i in range(1000)]
    got = list(helpers.streaming_bulk(url, iter(given), chunk_size=100, raise_on_error=False,
                                      yield_action=True))
    assert len(got) == len(given)
    for (ok, info, act), orig in zip(got, given):
        assert act is orig  # the very object, in the order given
        (op, item), = info.items()
        assert item["_id"] == orig["_id"]
        assert ok == (orig["n"] != "bad"), item
        if not ok:
            assert item["status"] == 400 and item["error"]["type"] == "mapper_parsing_exception"
    # parallel_bulk too; and with yield_ok=False only the failures, still paired
    bad = [(info, act) for ok, info, act in helpers.parallel_bulk(
        url, iter(given), chunk_size=100, raise_on_error=False, yield_ok=False,
        yield_action=True)]
    assert [a for _, a in bad] == [g for g in given if g["n"] == "bad"]
    assert all(i["index"]["_id"] == a["_id"] for i, a in bad)
    with pytest.raises(TypeError):
        helpers.bulk(url, iter(given), yield_action=True)
    assert count(index) == len([g for g in given if g["n"] != "bad"])


def test_results_come_while_a_slow_generator_is_read(url, make_index):
    """Without flush_after_seconds: the results are yielded between actions,
    not only when a chunk is handed over, nor at the generator's end. One
    full chunk (2,000 actions) at once, then one action every 10 ms until the
    consumer has had a result (at most 60 s), then 500 more: the first
    result must come before the second chunk is full (20 s of slow actions
    later; the first chunk's answer takes about a second)."""
    index = make_index()
    state = {"seen": False, "made": 0}
    chunk = 2000

    def slow():
        deadline = time.monotonic() + 60
        i = 0
        while i <= chunk or (not state["seen"] and time.monotonic() < deadline):
            if i > chunk:
                time.sleep(0.01)
            state["made"] = i + 1
            yield {"_index": index, "_id": str(i), "n": i}
            i += 1
        for j in range(i, i + 500):
            state["made"] = j + 1
            yield {"_index": index, "_id": str(j), "n": j}

    total = 0
    first_at = None
    for ok, _ in helpers.streaming_bulk(url, slow(), chunk_size=chunk):
        assert ok
        total += 1
        if first_at is None:
            first_at = state["made"]
        state["seen"] = True
    assert first_at is not None and first_at < 2 * chunk, \
        "the first result came after %s actions: only when a chunk was handed over" % first_at
    assert total == state["made"]
    assert count(index) == total


def test_flush_after_seconds_sends_a_partial_chunk_while_the_generator_waits(url, make_index):
    """The generator gives 150 actions (one full chunk and half of one) and
    then waits until the consumer has seen all 150 results: with
    flush_after_seconds the partial chunk goes out and its results come
    while the generator is still waiting."""
    index = make_index()
    seen_all = threading.Event()
    waited = {}

    def waiting():
        for i in range(150):
            yield {"_index": index, "_id": str(i), "n": i}
        t0 = time.monotonic()
        waited["ok"] = seen_all.wait(60)
        waited["s"] = time.monotonic() - t0
        for i in range(150, 200):
            yield {"_index": index, "_id": str(i), "n": i}

    got = []
    # a linger of 10 minutes: the partial chunk goes out only because the
    # helper flushes it
    for ok, info in helpers.streaming_bulk(url, waiting(), chunk_size=100,
                                           flush_after_seconds=0.3,
                                           esbulk_conf={"flush.interval.ms": 600000}):
        assert ok, info
        got.append(info["index"]["_id"])
        if len(got) == 150:
            seen_all.set()
    assert waited["ok"], "the results of the first 150 did not come while the generator waited"
    assert got == [str(i) for i in range(200)]
    assert count(index) == 200


def test_flush_after_seconds_reraises_the_generators_exception(url, make_index):
    index = make_index()

    def broken():
        for i in range(250):
            yield {"_index": index, "_id": str(i), "n": i}
        raise LookupError("the source broke")

    got = 0
    with pytest.raises(LookupError, match="the source broke"):
        for ok, _ in helpers.streaming_bulk(url, broken(), chunk_size=100,
                                            flush_after_seconds=5):
            got += 1
    # what was handed over before the exception was still sent
    assert count(index) >= got
    with pytest.raises(ValueError):
        list(helpers.streaming_bulk(url, iter(()), flush_after_seconds=0))


def test_enough_is_handed_to_the_library_to_keep_every_node_busy(url, make_index):
    """The helper hands the library, ahead of the chunk it yields, enough
    documents for every node's max.inflight.per.node requests and a full
    queue on each destination, twice: (2 x 3 nodes + 2 x 3) x 2,000 = 24,000
    here. It once stopped at 10,000 documents (5 chunks of 2,000; 4 of 5,000
    in the benchmark): each node then had one request in flight at a time
    and waited for the helper between requests. Bounded too: the actions of
    the chunks not yielded yet are held (1.5 times as many, at most)."""
    index = make_index(shards=6)
    docs, chunk = 100000, 2000
    st, body = http("GET", "/_cat/nodes?format=json")
    assert st == 200 and len(body) == 3, body  # the test cluster's 3 nodes
    fed = [0]

    def gen():
        for i in range(docs):
            fed[0] += 1
            yield {"_index": index, "_id": str(i), "_source": b'{"n":%d}' % i}
    yielded = lead = 0
    for ok, _ in helpers.streaming_bulk(url, gen(), chunk_size=chunk):
        assert ok
        yielded += 1
        lead = max(lead, fed[0] - yielded)
    assert yielded == docs
    ahead = (2 * 3 + 2 * 3) * chunk
    # read ahead of its results as far as the library needs (the cluster is
    # far slower than this generator), and no further
    assert lead >= ahead - chunk, lead
    assert lead <= ahead + ahead // 2 + chunk, lead
    assert count(index) == docs


def test_window_sizing():
    """_window: (max.inflight.per.node x nodes + 2 x destinations) chunks,
    at least IN_FLIGHT_DOCS, at most MAX_AHEAD_DOCS documents; seed entries
    are not nodes."""
    class Stub:
        def __init__(self, nodes, dests, seeds=0):
            self.st = {"nodes": [{"seed": False}] * nodes + [{"seed": True}] * seeds,
                       "destinations": dests}

        def stats(self):
            return self.st
    w = helpers._window
    assert w(Stub(3, 3), 5000, 2) == (60000, True)
    assert w(Stub(3, 6, seeds=1), 5000, 2) == (90000, True)  # shard queues
    assert w(Stub(3, 3), 5000, 8) == (helpers.MAX_AHEAD_DOCS, True)
    assert w(Stub(3, 3), 500, 2) == (helpers.IN_FLIGHT_DOCS, True)
    assert w(Stub(0, 0, seeds=1), 5000, 2) == (20000, False)  # before the topology
