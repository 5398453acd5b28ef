"""esbulk.helpers against the real cluster, and side by side with opensearch-py's."""
import copy
import json
import time

import pytest
from opensearchpy import OpenSearch
from opensearchpy import helpers as peer

import esbulk
from esbulk import _bulk, helpers
from conftest import count, http

N = 100000


@pytest.fixture(scope="module")
def client(url=None):
    from conftest import URL
    return OpenSearch([URL], timeout=120)


def actions(index, n, bad=()):
    for i in range(n):
        yield {"_index": index, "_id": str(i), "n": "bad" if i in bad else i}


@pytest.mark.parametrize("helper", ["bulk", "streaming_bulk", "parallel_bulk"])
def test_100k_documents_through_each_helper(client, make_index, helper):
    index = make_index()
    t0 = time.monotonic()
    if helper == "bulk":
        ok, errors = helpers.bulk(client, actions(index, N))
        assert (ok, errors) == (N, [])
    else:
        fn = getattr(helpers, helper)
        ids = []
        for ok, item in fn(client, actions(index, N), chunk_size=1000):
            assert ok, item
            (op, it), = item.items()
            assert op == "index" and it["status"] == 201 and it["result"] == "created"
            ids.append(it["_id"])
        # every action exactly one result, in the order of the actions
        assert ids == [str(i) for i in range(N)]
    print("100k through helpers.%s in %.1f s" % (helper, time.monotonic() - t0))
    assert count(index) == N


def test_client_may_be_a_url_or_a_list(url, make_index):
    index = make_index()
    assert helpers.bulk(url, actions(index, 100)) == (100, [])
    assert helpers.bulk([url], actions(index, 100), index=index, stats_only=True) == (100, 0)
    assert count(index) == 100


def test_client_conf_reads_hosts_and_credentials():
    c = OpenSearch(["https://u:p%40ss@es1.example:9201/prefix", "http://es2.example:9200"],
                   verify_certs=False, ssl_show_warn=False)
    conf = helpers.client_conf(c)
    # (opensearch-py shuffles its connections: the order is not the given one)
    assert sorted(conf["urls"].split(",")) == ["http://es2.example:9200",
                                               "https://es1.example:9201/prefix"]
    assert conf["auth.username"] == "u" and conf["auth.password"] == "p@ss"
    assert conf["tls.insecure"] == "true"
    c = OpenSearch(["http://es1.example:9200"], http_auth=("admin", "secret"))
    conf = helpers.client_conf(c)
    assert (conf["auth.username"], conf["auth.password"]) == ("admin", "secret")


def test_action_forms(client, make_index):
    """_source, the other keys as the body, _op_type create/update/delete,
    _routing, _version/_version_type, _if_seq_no/_if_primary_term."""
    index = make_index()
    acts = [
        {"_index": index, "_id": "a", "_source": {"n": 1}},
        {"_index": index, "_id": "b", "n": 2},
        {"_index": index, "_id": "c", "_op_type": "create", "n": 3},
        {"_index": index, "_id": "r", "_routing": "x", "n": 4},
        {"_index": index, "_id": "v", "_version": 10, "_version_type": "external", "n": 5},
    ]
    assert helpers.bulk(client, acts) == (5, [])
    acts2 = [
        {"_index": index, "_id": "a", "_op_type": "update", "doc": {"n": 11}},
        {"_index": index, "_id": "b", "_op_type": "delete"},
        {"_index": index, "_id": "v", "_version": 9, "_version_type": "external", "n": 6},
        {"_index": index, "_id": "c", "_if_seq_no": 999, "_if_primary_term": 1, "n": 7},
        {"_index": index, "_id": "a", "_op_type": "update", "retry_on_conflict": 2,
         "doc": {"m": 1}},
    ]
    ok, errors = helpers.bulk(client, acts2, raise_on_error=False)
    assert ok == 3
    assert [(e["index"]["_id"], e["index"]["status"], e["index"]["error"]["type"])
            for e in errors] == [("v", 409, "version_conflict_engine_exception"),
                                 ("c", 409, "version_conflict_engine_exception")]
    assert client.get(index=index, id="a")["_source"] == {"n": 11, "m": 1}
    assert client.get(index=index, id="r", routing="x")["_routing"] == "x"
    assert client.get(index=index, id="v")["_version"] == 10
    assert not client.exists(index=index, id="b")


def test_action_shapes_beyond_the_cache(client, make_index):
    """The inline expand_action keeps what it learnt of each key set (at most
    64, then starts again): 150 key sets, in orders that repeat, each action
    still sent as expand_action gives it (body, op, _id, default index)."""
    index = make_index()
    acts = []
    for i in range(300):
        k = i % 150
        a = {"_id": "d%d" % i, "f%d" % k: i}
        if k % 3 == 0:
            a["_op_type"] = "create"
        if k % 5 == 0:
            a = {"_source": {"s%d" % k: i}, **a}
        if k % 7:
            a["_index"] = index
        acts.append(a)
    assert helpers.bulk(client, acts, index=index) == (300, [])
    got = client.mget(index=index, body={"ids": ["d%d" % i for i in range(300)]})["docs"]
    for a, doc in zip(acts, got):
        assert doc["found"], doc
        _, body = helpers.expand_action(a)
        assert doc["_source"] == body, (a, doc)


# ---------------------------------------------------------------------------
# The same test body against opensearch-py's helpers and ours: same outcomes.

def _norm(obj, index):
    """Outcomes with the index name and per-run fields (seq_no, ...) taken out."""
    s = json.dumps(obj, sort_keys=True, default=lambda o: "<%s>" % type(o).__name__)
    obj = json.loads(s.replace(index, "INDEX"))

    def strip(o):
        if isinstance(o, dict) and "type" in o and "reason" in o:
            # a server error: libesbulk keeps its type, reason and root cause,
            # not the index_uuid / shard some errors carry
            return {k: strip(v) for k, v in o.items() if k in ("type", "reason", "caused_by")}
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items()
                    if k not in ("_seq_no", "_primary_term", "_shards", "_version",
                                 "forced_refresh")}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o
    return strip(obj)


BAD = (7, 1234, 1240, 2999)


def scenario_bulk_no_raise(h, client, index):
    return h.bulk(client, actions(index, 3000, BAD), raise_on_error=False)


def scenario_bulk_stats_only(h, client, index):
    return h.bulk(client, actions(index, 3000, BAD), raise_on_error=False, stats_only=True)


def scenario_bulk_raises(h, client, index):
    try:
        h.bulk(client, actions(index, 3000, BAD))
    except h.BulkIndexError as e:
        return ["raised", type(e).__name__, str(e), e.errors]
    return ["no exception"]


def scenario_streaming_raises(h, client, index):
    seen = []
    try:
        for ok, item in h.streaming_bulk(client, actions(index, 3000, (600, 610, 2500)),
                                         chunk_size=500):
            seen.append((ok, item))
    except h.BulkIndexError as e:
        return [seen, "raised", len(e.errors), e.errors]
    return [seen, "no exception"]


def scenario_streaming_no_raise(h, client, index):
    return list(h.streaming_bulk(client, actions(index, 2000, BAD), chunk_size=300,
                                 raise_on_error=False, yield_ok=False))


def scenario_ignore_status(h, client, index):
    return list(h.streaming_bulk(client, actions(index, 1000, (3, 900)), ignore_status=400))


def scenario_update_missing(h, client, index):
    acts = [{"_op_type": "update", "_index": index, "_id": "missing", "doc": {"n": 1}},
            {"_op_type": "delete", "_index": index, "_id": "missing-too"},
            {"_op_type": "create", "_index": index, "_id": "x", "n": 1},
            {"_op_type": "create", "_index": index, "_id": "x", "n": 2}]
    try:
        return ["ok", h.bulk(client, acts, raise_on_error=False),
                h.bulk(client, acts)]
    except h.BulkIndexError as e:
        return ["raised", e.errors]


SCENARIOS = [scenario_bulk_no_raise, scenario_bulk_stats_only, scenario_bulk_raises,
             scenario_streaming_raises, scenario_streaming_no_raise, scenario_ignore_status,
             scenario_update_missing]


def _rejections(client):
    """Write rejections and breaker trips on the cluster so far (every node)."""
    st = client.nodes.stats(metric="thread_pool,breaker")
    n = 0
    for node in st["nodes"].values():
        n += node["thread_pool"].get("write", {}).get("rejected", 0)
        n += sum(b.get("tripped", 0) for b in node.get("breakers", {}).values())
    return n


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__[9:] for s in SCENARIOS])
def test_same_outcomes_as_opensearch_py(client, make_index, scenario):
    out = {}
    counts = {}
    for name, h in (("peer", peer), ("esbulk", helpers)):
        # opensearch-py's helpers do not retry an item 429 (max_retries=0),
        # ours do: when the shared cluster rejected writes while the peer ran
        # (make -j2 check loads it), the peer's outcome says so, not what is
        # compared here. Its run is repeated then, on a fresh index.
        for attempt in range(6):
            before = _rejections(client) if name == "peer" else 0
            index = make_index(name)
            out[name] = _norm(scenario(h, client, index), index)
            counts[name] = count(index)
            if name != "peer" or _rejections(client) == before:
                break
            time.sleep(2)
        else:
            pytest.fail("the cluster rejected writes during each of 6 runs of the peer")
    assert out["esbulk"] == out["peer"]
    if scenario in (scenario_streaming_raises, scenario_bulk_raises):
        # after a raise, the chunks esbulk had already handed to the library
        # are still sent: the peer's indexed documents plus some
        assert counts["esbulk"] >= counts["peer"]
    else:
        assert counts["esbulk"] == counts["peer"]


def test_bulk_index_error_is_the_peers_class():
    assert issubclass(helpers.BulkIndexError, peer.BulkIndexError)
    e = helpers.BulkIndexError("1 document(s) failed to index.", [{"index": {}}])
    assert e.errors == [{"index": {}}]


def test_undeliverable_documents_raise_or_are_reported():
    acts = [{"_index": "nowhere", "_id": str(i), "n": i} for i in range(3)]
    conf = {"connect.timeout.ms": 100, "retry.max": 0}
    with pytest.raises(esbulk.TransportError):
        helpers.bulk("http://127.0.0.1:1", acts, esbulk_conf=conf)
    ok, errors = helpers.bulk("http://127.0.0.1:1", acts, raise_on_exception=False,
                              raise_on_error=False, esbulk_conf=conf)
    assert ok == 0 and len(errors) == 3
    info = errors[0]["index"]
    assert info["_id"] == "0" and info["data"] == {"n": 0} and "exception" in info
    with pytest.raises(TypeError):
        helpers.bulk("http://127.0.0.1:1", acts, no_such_argument=1)


def test_a_document_refused_at_add_time_is_a_failed_item_and_the_rest_go_on(client,
                                                                             make_index):
    """Not JSON, over max.doc.bytes, options that do not fit: each is a 400
    item of its own (as the server's refusal of such a document is in
    opensearch-py), in the order of the actions; the rest of its chunk and
    of the stream are sent."""
    index = make_index()
    acts = ['{"n": %d}' % i for i in range(1000)]
    acts[700] = '{"n": 700'                                   # truncated JSON
    acts[200] = '{"n": 200, "pad": "%s"}' % ("x" * 300)       # over max.doc.bytes
    acts[999] = '{"n": 999'                                   # the last one
    got = list(helpers.streaming_bulk(client, acts, index=index, chunk_size=500,
                                      raise_on_error=False, raise_on_exception=False,
                                      esbulk_conf={"max.doc.bytes": 256}))
    assert len(got) == 1000
    assert [k for k, (ok, _) in enumerate(got) if not ok] == [200, 700, 999]
    for k in (200, 700, 999):
        (op, it), = got[k][1].items()
        assert op == "index" and it["status"] == 400, it
        assert it["error"]["type"] == ("illegal_argument_exception" if k == 200
                                       else "mapper_parsing_exception"), it
        assert "esbulk" in it["error"]["reason"]
    assert count(index) == 997
    # opensearch-py reports the same document the same way (the server refuses it)
    peer_got = list(peer.streaming_bulk(client, ['{"n": 1}', '{"n": 2', '{"n": 3}'],
                                        index=index, raise_on_error=False))
    ours = list(helpers.streaming_bulk(client, ['{"n": 1}', '{"n": 2', '{"n": 3}'],
                                       index=index, raise_on_error=False))
    assert [ok for ok, _ in ours] == [ok for ok, _ in peer_got] == [True, False, True]
    assert ours[1][1]["index"]["status"] == peer_got[1][1]["index"]["status"] == 400
    assert ours[1][1]["index"]["error"]["type"] == peer_got[1][1]["index"]["error"]["type"]

    # raise_on_error: counts as a failed item (BulkIndexError with its data)
    index2 = make_index("raise")
    dicts = [{"_index": index2, "_id": str(i), "n": i} for i in range(10)]
    dicts[4] = {"_index": index2, "_id": "4", "n": 4, "_version_type": "external"}
    with pytest.raises(helpers.BulkIndexError) as e:
        helpers.bulk(client, dicts)
    assert len(e.value.errors) == 1
    it = e.value.errors[0]["index"]
    assert it["_id"] == "4" and it["status"] == 400 and it["data"] == {"n": 4}
    assert "version_type" in it["error"]["reason"]
    assert helpers.bulk(client, dicts, raise_on_error=False)[0] == 9
    assert count(index2) == 9


def test_helpers_take_documents_up_to_the_servers_default_limit(client, make_index):
    """max.doc.bytes is 100 MiB in the helpers (the server's
    http.max_content_length), not the library's 10 MiB: an 11 MiB document
    is indexed, as with opensearch-py."""
    index = make_index()
    big = {"s": "x" * (11 * 1024 * 1024)}
    acts = [{"_index": index, "_id": "before", "n": 1}, {"_index": index, "_id": "big", **big},
            {"_index": index, "_id": "after", "n": 2}]
    assert helpers.bulk(client, acts, raise_on_error=False) == (3, [])
    assert count(index) == 3


def _gen_then_raise(index, n, exc):
    for i in range(n):
        yield {"_index": index, "_id": str(i), "n": i}
    raise exc


@pytest.mark.parametrize("flush_after", [None, 30])
def test_when_the_actions_raise_the_results_of_what_was_sent_come_first(client, make_index,
                                                                        flush_after):
    """The generator raises after 5,000 actions (chunks of 500): as
    opensearch-py, every chunk handed over has its results yielded (4,500:
    the 10th chunk was still being filled), then the exception comes."""
    kw = {} if flush_after is None else {"flush_after_seconds": flush_after}
    out = {}
    for name, h in (("peer", peer), ("esbulk", helpers)):
        if name == "peer" and flush_after is not None:
            continue
        index = make_index(name)
        seen = []
        with pytest.raises(RuntimeError, match="source failed"):
            for ok, item in h.streaming_bulk(client, _gen_then_raise(
                    index, 5000, RuntimeError("source failed")), chunk_size=500,
                    **(kw if name == "esbulk" else {})):
                assert ok
                seen.append(item["index"]["_id"])
        out[name] = (seen, count(index))
    assert out["esbulk"] == ([str(i) for i in range(4500)], 4500)
    if "peer" in out:
        assert out["peer"] == out["esbulk"]


def test_ctrl_c_stops_the_helpers_at_once():
    """KeyboardInterrupt (here from the generator) with documents the library
    cannot deliver: the helper closes at once, not after a 30 s wait."""
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        helpers.bulk("http://127.0.0.1:1", _gen_then_raise("nowhere", 20, KeyboardInterrupt()),
                     chunk_size=5, esbulk_conf={"connect.timeout.ms": 100, "retry.max": 1000,
                                                "delivery.timeout.ms": 0})
    took = time.monotonic() - t0
    assert took < 10, took


def test_bytes_ids_and_routings_are_sent_as_they_are(client, url, make_index):
    """A bytes _id / routing is the UTF-8 it holds, not "b'abc'"; bytes that
    are not UTF-8 are refused (Indexer: InvalidDocumentError; helpers: a 400
    item). (opensearch-py's serializer raises SerializationError for them.)"""
    index = make_index()
    got = list(helpers.streaming_bulk(client, [
        {"_index": index, "_id": b"abc", "n": 1},
        {"_index": index, "_id": "d", "_routing": b"r1", "n": 2},
        {"_index": index, "_id": b"\xff\xfe", "n": 3},
        {"_index": index, "_id": 7, "n": 4}], raise_on_error=False))
    assert [(ok, it["index"]["_id"]) for ok, it in got] == [
        (True, "abc"), (True, "d"), (False, "\ufffd\ufffd"), (True, "7")]
    assert got[2][1]["index"]["status"] == 400
    assert client.get(index=index, id="d", routing="r1")["_routing"] == "r1"
    res = []
    with esbulk.Indexer(url, on_result=res.append) as ix:
        ix.add(index, {"n": 5}, id=b"xyz", routing=b"r2")
        ix.add_many(index, [{"n": 6}], ids=[b"many"], routings=[bytearray(b"r3")])
        ix.add_actions([{"_index": index, "_id": b"act", "_routing": b"r4", "n": 7}])
        with pytest.raises(esbulk.InvalidDocumentError):
            ix.add(index, {"n": 8}, id=b"\xff")
    assert sorted(r.id for r in res) == ["act", "many", "xyz"] and all(r.ok for r in res)
    assert client.get(index=index, id="xyz", routing="r2")["_routing"] == "r2"
    assert client.get(index=index, id="many", routing="r3")["_routing"] == "r3"


def test_esbulk_conf_keys_the_helpers_cannot_work_with_are_refused(url, make_index):
    index = make_index()
    for conf in ({"result.failures_only": True}, {"result_failures_only": "1"}):
        with pytest.raises(ValueError, match="result.failures_only"):
            helpers.bulk(url, ({"_index": index, "n": i} for i in range(10)), esbulk_conf=conf)
    assert helpers.bulk(url, [{"_index": index, "n": 1}],
                        esbulk_conf={"result.failures_only": False}) == (1, [])


def test_an_update_with_a_source_filter_is_refused_clearly(url, make_index):
    """{"_op_type": "update", "doc": ..., "_source": True}: opensearch-py puts
    _source (a source filter) on the action line and yields the item's "get";
    libesbulk can send neither: refused with a clear error, not sent without
    its filter."""
    index = make_index()
    acts = [{"_index": index, "_id": "0", "n": 0},
            {"_op_type": "update", "_index": index, "_id": "1", "doc": {"n": 1},
             "doc_as_upsert": True, "_source": True}]
    with pytest.raises(ValueError, match="action 1: an update's _source"):
        list(helpers.streaming_bulk(url, acts))
    with esbulk.Indexer(url) as ix:
        with pytest.raises(ValueError, match="source filter"):
            ix.add_actions(acts[1:])
    # a mapping _source is the update's body, as before
    ok, _ = helpers.bulk(url, [{"_op_type": "update", "_index": index, "_id": "2",
                                "_source": {"doc": {"n": 2}, "doc_as_upsert": True}}])
    assert ok == 1


def test_an_empty_id_is_refused_not_given_a_generated_one(client, url, make_index):
    """"_id": "" is not "no _id": the server refuses it ("if _id is specified
    it must not be empty", 400), and opensearch-py reports that item. The
    library takes a zero-length id for none and would index the document
    under an id of its own: the helpers report a 400 item instead, the
    Indexer raises InvalidDocumentError, and nothing is indexed."""
    index = make_index()
    acts = [{"_index": index, "_id": "a", "n": 1}, {"_index": index, "_id": "", "n": 2},
            {"_index": index, "_id": b"", "_routing": "r", "n": 3},
            {"_index": index, "_id": "b", "n": 4}]
    peer_got = list(peer.streaming_bulk(client, acts[:2], raise_on_error=False))
    got = list(helpers.streaming_bulk(client, acts, raise_on_error=False))
    assert [ok for ok, _ in got] == [True, False, False, True]
    assert [ok for ok, _ in peer_got] == [True, False]
    for k in (1, 2):
        it = got[k][1]["index"]
        assert it["status"] == peer_got[1][1]["index"]["status"] == 400, it
        assert it["error"]["type"] == peer_got[1][1]["index"]["error"]["type"]
        assert "must not be empty" in it["error"]["reason"]
    assert helpers.bulk(client, acts[:2], raise_on_error=False)[0] == 1
    assert count(index) == 2  # "a", "b": nothing under a generated id
    res = []
    with esbulk.Indexer(url, on_result=res.append) as ix:
        with pytest.raises(esbulk.InvalidDocumentError, match="must not be empty"):
            ix.add(index, {"n": 5}, id="")
        with pytest.raises(esbulk.InvalidDocumentError) as e:
            ix.add_many(index, [{"n": 6}, {"n": 7}], ids=["c", ""])
        assert e.value.accepted == 1
        with pytest.raises(esbulk.InvalidDocumentError):
            ix.add_actions([{"_index": index, "_id": "", "n": 8}])
    assert [r.id for r in res] == ["c"] and res[0].ok
    assert count(index) == 3


@pytest.mark.parametrize("chunk_size", [0, -1, None])
def test_a_chunk_size_below_one_puts_no_limit_on_a_chunk(client, make_index, chunk_size):
    """opensearch-py's chunker cuts a chunk at chunk_size actions only when
    it is reached: 0 or less is no limit (max_chunk_bytes alone cuts). Ours
    failed with KeyError after the second action of the chunk."""
    index = make_index()
    acts = [{"_index": index, "_id": str(i), "n": i} for i in range(50)]
    peer_got = list(peer.streaming_bulk(client, acts, chunk_size=chunk_size))
    got = list(helpers.streaming_bulk(client, acts, chunk_size=chunk_size))
    assert [(ok, it["index"]["_id"]) for ok, it in got] == \
        [(ok, it["index"]["_id"]) for ok, it in peer_got] == [(True, str(i)) for i in range(50)]
    assert helpers.bulk(client, acts, chunk_size=chunk_size, max_chunk_bytes=1000) == (50, [])
    assert count(index) == 50


def test_meta_keys_the_server_no_longer_knows_fail_their_document(client, make_index):
    """_parent / parent, _percolate and _timestamp are meta keys to
    opensearch-py's expand_action, and the server refuses a request with
    them ("contains an unknown parameter"): opensearch-py's whole chunk
    fails. Ours dropped them silently, so a parent's child was indexed, routed
    by its own _id rather than its parent's. Each is now a 400 item of its
    own; the other documents of the chunk are indexed."""
    index = make_index()
    acts = [{"_index": index, "_id": "1", "n": 1},
            {"_index": index, "_id": "2", "_parent": "1", "n": 2},
            {"_index": index, "_id": "3", "parent": "1", "n": 3},
            {"_index": index, "_id": "4", "_percolate": "*", "n": 4},
            {"_index": index, "_id": "5", "_timestamp": 1, "n": 5},
            {"_index": index, "_id": "6", "n": 6}]
    got = list(helpers.streaming_bulk(client, acts, raise_on_error=False))
    assert [ok for ok, _ in got] == [True, False, False, False, False, True], got
    for ok, item in got[1:5]:
        it = item["index"]
        assert it["status"] == 400 and it["error"]["type"] == "illegal_argument_exception", it
        assert "unknown parameter" in it["error"]["reason"], it
    assert count(index) == 2


def test_what_a_custom_expand_action_callback_puts_on_the_line_is_not_dropped(client,
                                                                           make_index):
    """An expand_action_callback's action line is the server's to read: an
    op_type "create" makes an index a create (an existing _id is a 409, not
    overwritten), and keys the server does not know ("_routing", "_version"
    as opensearch-py would send them from such a callback: the server
    refuses the request) are 400 items. Ours dropped them all: the create
    overwrote, the routing and the version were lost."""
    index = make_index()
    assert helpers.bulk(client, [{"_index": index, "_id": "1", "n": 0}]) == (1, [])

    def cb(d):
        meta = {"_index": index, "_id": d["id"]}
        meta.update(d["meta"])
        return {"index": meta}, {"n": d["n"]}

    docs = [{"id": "1", "n": 1, "meta": {"op_type": "create"}},
            {"id": "2", "n": 2, "meta": {"op_type": "create"}},
            {"id": "3", "n": 3, "meta": {"_routing": "r"}},
            {"id": "4", "n": 4, "meta": {"_version": 5, "version_type": "external"}},
            {"id": "5", "n": 5, "meta": {"routing": "r", "version": 5,
                                         "version_type": "external"}},
            {"id": "6", "n": 6, "meta": {"op_type": "delete"}}]
    got = list(helpers.streaming_bulk(client, docs, expand_action_callback=cb,
                                      raise_on_error=False))
    assert [ok for ok, _ in got] == [False, True, False, False, True, False], got
    assert got[0][1]["create"]["status"] == 409, got[0]
    assert "create" in got[1][1], got[1]
    for k in (2, 3):
        it = got[k][1]["index"]
        assert it["status"] == 400 and "unknown parameter" in it["error"]["reason"], it
    assert "does not fit" in got[5][1]["index"]["error"]["reason"], got[5]
    doc1 = http("GET", "/%s/_doc/1" % index)[1]
    assert doc1["_source"] == {"n": 0}  # not overwritten by the create
    doc5 = http("GET", "/%s/_doc/5?routing=r" % index)[1]
    assert doc5["_version"] == 5 and doc5["_routing"] == "r", doc5
    assert count(index) == 3


def test_a_none_action_is_refused_not_skipped(client, make_index):
    """None among the actions is an error of the caller's generator:
    opensearch-py raises (AttributeError in expand_action). Ours skipped it,
    and cut the chunk there: results no longer lined up with the actions."""
    index = make_index()
    acts = [{"_index": index, "_id": "1", "n": 1}, None, {"_index": index, "_id": "2", "n": 2}]
    with pytest.raises(AttributeError):
        list(peer.streaming_bulk(client, acts))
    with pytest.raises(TypeError, match="not None"):
        list(helpers.streaming_bulk(client, acts))


@pytest.mark.parametrize("shape", ["routing", "version", "delete"])
def test_max_chunk_bytes_cuts_where_opensearch_py_cuts(client, make_index, shape):
    """A chunk's bytes are counted as opensearch-py's chunker counts them:
    the whole action line (routing, versions, the op's name) and the body.
    Ours counted 32 bytes, the index, the _id and the body, so the chunks
    differed (40 actions with routing in 1,000 bytes: 10 chunks of 4 against
    8 of 5), and so did what was yielded before the generator raised."""
    index = make_index()

    def acts():
        for i in range(40):
            a = {"_index": index, "_id": "d%d" % i}
            if shape == "routing":
                a.update(_routing="r%d" % i, n=i)
            elif shape == "version":
                a.update(_version=i + 1, _version_type="external", n=i)
            else:
                a["_op_type"] = "delete"
            yield a
        raise RuntimeError("the source failed")

    def yielded(h):
        got = 0
        with pytest.raises(RuntimeError):
            for _ in h.streaming_bulk(client, acts(), max_chunk_bytes=1000,
                                      raise_on_error=False):
                got += 1
        return got

    assert yielded(helpers) == yielded(peer) > 0


def test_an_undelivered_document_raises_the_peers_connection_error():
    """opensearch-py raises its ConnectionError (a TransportError, status_code
    "N/A") when the cluster cannot be reached: an ``except`` written for it
    must catch ours, which is also an esbulk.TransportError."""
    from opensearchpy import exceptions as peer_exc
    acts = [{"_index": "nowhere", "_id": str(i), "n": i} for i in range(3)]
    conf = {"connect.timeout.ms": 100, "retry.max": 0}
    with pytest.raises(peer_exc.ConnectionError) as e:
        helpers.bulk("http://127.0.0.1:1", acts, esbulk_conf=conf)
    assert isinstance(e.value, esbulk.TransportError)
    assert isinstance(e.value, peer_exc.TransportError)
    assert e.value.status_code == "N/A" and e.value.code < 0
    assert e.value.error == str(e.value) and "127.0.0.1:1" in str(e.value)
    for ok, item in helpers.streaming_bulk("http://127.0.0.1:1", acts, esbulk_conf=conf,
                                           raise_on_error=False, raise_on_exception=False):
        assert not ok and isinstance(item["index"]["exception"], peer_exc.ConnectionError)
    try:  # the same except clause catches both
        peer.bulk(OpenSearch(["http://127.0.0.1:1"], max_retries=0), acts)
    except peer_exc.ConnectionError as pe:
        assert pe.status_code == "N/A"


def test_options_the_server_ignores_for_an_op_do_not_fail_the_document(client, url, make_index):
    """retry_on_conflict on an index, create or delete, and a pipeline on an
    update or delete: the server ignores them, and opensearch-py's helpers
    index (delete) such documents. A program that puts the same options on
    every action must not lose those documents with ours (the library refuses
    the options for those ops): they are dropped; options the server refuses
    (an external version on a create) are still a 400 item."""
    http("PUT", "/_ingest/pipeline/pytest-set-p", {
        "processors": [{"set": {"field": "p", "value": 1}}]})

    def acts(index):
        return [{"_index": index, "_id": "1", "n": 1, "retry_on_conflict": 3},
                {"_op_type": "create", "_index": index, "_id": "2", "n": 2,
                 "_retry_on_conflict": 3, "pipeline": "pytest-set-p"},
                {"_op_type": "update", "_index": index, "_id": "1", "doc": {"n": 3},
                 "retry_on_conflict": 3, "pipeline": "pytest-set-p"},
                {"_op_type": "delete", "_index": index, "_id": "2", "retry_on_conflict": 3,
                 "pipeline": "pytest-set-p"},
                {"_index": index, "_id": "3", "n": 4, "retry_on_conflict": 3,
                 "pipeline": "pytest-set-p"}]
    want = [(True, "index"), (True, "create"), (True, "update"), (True, "delete"),
            (True, "index")]
    for h in (peer, helpers):
        index = make_index(h.__name__.split(".")[0])
        got = list(h.streaming_bulk(client, acts(index), raise_on_error=False))
        assert [(ok, op) for ok, item in got for op in item] == want, got
        assert count(index) == 2
        assert client.get(index=index, id="3")["_source"] == {"n": 4, "p": 1}
    index = make_index("indexer")
    res = []
    with esbulk.Indexer(url, on_result=res.append) as ix:
        ix.add_actions(acts(index))
    assert [r.ok for r in res] == [True] * 5, [(r.id, r.reason) for r in res]
    assert count(index) == 2


def test_client_conf_reads_the_credentials_of_a_requests_connection_or_refuses_them():
    """With connection_class=RequestsHttpConnection opensearch-py keeps
    http_auth on its requests session, not on the connection: the
    credentials were dropped (every document a 401). An auth the library
    cannot use (an AWS SigV4 signer) raised nothing and was dropped too (every
    document a 403): it raised TypeError naming it (an AWS signer is taken
    now, test_client_conf_takes_an_aws_signer; another auth object still
    raises)."""
    from opensearchpy import RequestsHttpConnection

    c = OpenSearch(["http://es1.example:9200"], http_auth=("admin", "s:cret"),
                   connection_class=RequestsHttpConnection)
    conf = helpers.client_conf(c)
    assert (conf["auth.username"], conf["auth.password"]) == ("admin", "s:cret")
    c = OpenSearch(["http://es1.example:9200"], connection_class=RequestsHttpConnection,
                   headers={"Authorization": "Bearer tok"})
    assert helpers.client_conf(c)["auth.bearer"] == "tok"

    for cc, auth in ((None, lambda *a: {}), (RequestsHttpConnection, lambda r: r)):
        kw = {"connection_class": cc} if cc else {}
        c = OpenSearch(["http://es1.example:9200"], http_auth=auth, **kw)
        with pytest.raises(TypeError, match="http_auth"):
            helpers.client_conf(c)


def test_an_empty_index_name_is_a_failed_item_not_the_end_of_the_stream(client, make_index):
    """"_index": "" is refused by the server for that document alone (400
    invalid_index_name_exception), and opensearch-py goes on with the rest;
    ours raised ValueError and stopped the whole stream."""
    index = make_index()
    acts = [{"_index": index, "_id": "a", "n": 1}, {"_index": "", "_id": "b", "n": 2},
            {"_index": index, "_id": "c", "n": 3}]
    peer_got = list(peer.streaming_bulk(client, acts, raise_on_error=False))
    got = list(helpers.streaming_bulk(client, acts, raise_on_error=False))
    assert [ok for ok, _ in got] == [ok for ok, _ in peer_got] == [True, False, True]
    it, pit = got[1][1]["index"], peer_got[1][1]["index"]
    assert (it["status"], it["error"]["type"], it["_id"]) == \
        (pit["status"], pit["error"]["type"], pit["_id"]) == (400, "invalid_index_name_exception", "b")
    with pytest.raises(helpers.BulkIndexError) as e:
        helpers.bulk(client, acts)
    assert [list(x.values())[0]["_id"] for x in e.value.errors] == ["b"]
    assert helpers.bulk(client, [{"_index": "", "n": 1}] * 3, raise_on_error=False)[0] == 0
    assert count(index) == 2


def test_an_id_that_cannot_be_encoded_raises_its_error_not_results_never_came(client,
                                                                             make_index):
    """A str _id with a lone surrogate cannot be UTF-8: opensearch-py raises
    UnicodeEncodeError, as ours did for such a routing. For an _id ours
    raised RuntimeError("esbulk: N result(s) never came"), as if documents
    had been lost: its chunk was counted as handed to the library before the
    ids were encoded."""
    index = make_index()
    acts = [{"_index": index, "_id": str(i), "n": i} for i in range(5)]
    acts.append({"_index": index, "_id": "\ud800", "n": 5})
    with pytest.raises(UnicodeEncodeError):
        list(peer.streaming_bulk(client, acts, chunk_size=3))
    got = []
    with pytest.raises(UnicodeEncodeError):
        for ok, item in helpers.streaming_bulk(client, acts, chunk_size=3):
            got.append(item["index"]["_id"])
    assert got == ["0", "1", "2"]  # the chunk sent before it, as opensearch-py


def test_an_index_of_none_takes_the_default_index(client, make_index):
    """{"_index": None, ...} with index=...: opensearch-py sends "_index":
    null, and the server takes the request's index; ours raised ValueError
    "no _index and no index= given" (it was given)."""
    index = make_index()
    acts = [{"_index": None, "_id": "1", "n": 1},
            {"_index": None, "_id": "2", "_routing": "r", "n": 2}]
    peer_got = list(peer.streaming_bulk(client, acts, index=index))
    got = list(helpers.streaming_bulk(client, acts, index=index))
    assert [(ok, it["index"]["_index"]) for ok, it in got] == \
        [(ok, it["index"]["_index"]) for ok, it in peer_got] == [(True, index)] * 2
    assert helpers.bulk(client, acts, index=index) == (2, [])


def test_timeout_strings_with_their_units(url, make_index, monkeypatch):
    """timeout="30s" (opensearch-py passes it to client.bulk): every string
    with a unit raised ValueError "could not convert string to float: ''"
    (the unit was cut from the wrong end). Longer than the library's longest
    (an hour) is an hour."""
    index = make_index()
    made = []

    class Spy(esbulk.Indexer):
        def __init__(self, *a, **kw):
            made.append(kw.get("request.timeout.ms"))
            super().__init__(*a, **kw)
    monkeypatch.setattr(_bulk, "Indexer", Spy)  # where the helpers make theirs
    for t, ms in (("30s", 30000), ("1m", 60000), ("500ms", 500), ("2h", 3600000),
                  ("1.5s", 1500), ("10", 10000), (7, 7000)):
        assert helpers.bulk(url, [{"_index": index, "_id": "1", "n": 1}], timeout=t) == (1, [])
        assert made[-1] == ms, t
    with pytest.raises(ValueError, match="timeout"):
        helpers.bulk(url, [{"_index": index, "n": 1}], request_timeout="5 parsecs")


def test_ids_and_routings_that_are_not_str_are_written_as_opensearch_py_writes_them(
        client, url, make_index):
    """opensearch-py writes a non-str _id / routing into the action line with
    its serializer: True as true, a datetime in ISO 8601, a Decimal as its
    float. Ours took str(): "True", "2024-01-02 03:04:05", "1.10", so the
    same actions made other documents (duplicates for a program that
    switches)."""
    import datetime
    import decimal
    vals = [True, datetime.datetime(2024, 1, 2, 3, 4, 5), decimal.Decimal("1.10"), 7, 1.5,
            datetime.date(2024, 1, 2)]
    want = ["true", "2024-01-02T03:04:05", "1.1", "7", "1.5", "2024-01-02"]
    ids = {}
    for name, h in (("peer", peer), ("esbulk", helpers)):
        index = make_index(name)
        acts = [{"_index": index, "_id": v, "_routing": v, "n": 1} for v in vals]
        got = list(h.streaming_bulk(client, acts))
        ids[name] = [it["index"]["_id"] for ok, it in got]
        http("POST", "/%s/_refresh" % index)
        st, body = http("GET", "/%s/_search?size=10" % index)
        assert sorted(x["_routing"] for x in body["hits"]["hits"]) == sorted(want)
    assert ids["esbulk"] == ids["peer"] == want
    index = make_index("indexer")
    res = []
    with esbulk.Indexer(url, on_result=res.append) as ix:
        for v in vals:
            ix.add(index, {"n": 1}, id=v, routing=v)
        ix.add_many(index, [{"n": 1}] * len(vals), ids=vals)
    assert sorted(r.id for r in res) == sorted(want * 2)


def test_client_conf_reads_the_clients_timeout(url, make_index, monkeypatch):
    """OpenSearch(..., timeout=120): opensearch-py's helpers wait that long
    for each request; ours used the library's 30 s, so a slow cluster saw
    its requests time out and be sent again. The timeout given to the client
    is read (the library's default stays when none was); the helpers'
    own timeout= wins."""
    assert helpers.client_conf(OpenSearch([url], timeout=120))["request.timeout.ms"] == "120000"
    assert "request.timeout.ms" not in helpers.client_conf(OpenSearch([url]))
    index = make_index()
    made = []

    class Spy(esbulk.Indexer):
        def __init__(self, *a, **kw):
            made.append(str(kw.get("request.timeout.ms")))
            super().__init__(*a, **kw)
    monkeypatch.setattr(_bulk, "Indexer", Spy)  # where the helpers make theirs
    acts = [{"_index": index, "_id": "1", "n": 1}]
    assert helpers.bulk(OpenSearch([url], timeout=120), acts) == (1, [])
    assert helpers.bulk(OpenSearch([url], timeout=120), acts, request_timeout=5) == (1, [])
    assert made == ["120000", "5000"]


def test_client_conf_passes_the_clients_own_headers_on():
    """A client made with headers={"X-Opaque-Id": ...} (or securitytenant for
    OpenSearch's security plugin) sent them with every request; client_conf
    read only Authorization out of them and dropped the rest, so the helpers'
    requests went without them. They go to http.headers now, without the
    client's own defaults (user agent, content type) and the credentials."""
    from opensearchpy import RequestsHttpConnection

    want = {"x-opaque-id: job-7", "securitytenant: global_tenant"}
    for kw in ({}, {"connection_class": RequestsHttpConnection}):
        c = OpenSearch(["http://es1.example:9200"], http_auth=("u", "p"),
                       headers={"X-Opaque-Id": "job-7", "securitytenant": "global_tenant"}, **kw)
        conf = helpers.client_conf(c)
        assert set(conf["http.headers"].split("\n")) == want, conf
        assert (conf["auth.username"], conf["auth.password"]) == ("u", "p")
    # nothing of the user's: no key
    assert "http.headers" not in helpers.client_conf(OpenSearch(["http://es1.example:9200"]))
    c = OpenSearch(["http://es1.example:9200"], headers={"Authorization": "Bearer tok"})
    assert "http.headers" not in helpers.client_conf(c)


def test_indexer_http_headers_as_a_dict_or_lines(url, make_index):
    """http_headers takes a dict or "Name: value" lines; a header the library
    sets itself is refused by name, before anything is sent."""
    index = make_index()
    for h in ({"X-Opaque-Id": "py-test"}, ["X-Opaque-Id: py-test", "X-Other: 1"]):
        with esbulk.Indexer(url, http_headers=h) as ix:
            ix.add(index, {"n": 1}, id="a")
            ix.flush()
    assert count(index) == 1
    with pytest.raises(esbulk.ConfigError, match="Content-Type is the library's to set"):
        esbulk.Indexer(url, http_headers={"Content-Type": "text/plain"})


def test_a_calls_headers_and_credentials_go_with_its_requests():
    """opensearch-py takes headers=, opaque_id=, http_auth= and api_key= on a
    helpers call (they go to client.bulk); ours raised TypeError. They go to
    http.headers and the auth.* keys now, the call's over the client's."""
    conf = {"http.headers": "x-opaque-id: client\nx-keep: 1", "auth.username": "u",
            "auth.password": "p"}
    helpers._pass_headers(conf, {"X-Opaque-Id": "call", "User-Agent": "ua",
                                 "Authorization": "Bearer tok"}, override=True)
    assert set(conf["http.headers"].split("\n")) == {"x-opaque-id: call", "x-keep: 1"}
    assert conf["auth.bearer"] == "tok" and "auth.username" not in conf
    # a client's Authorization does not replace a user it has
    conf = {"auth.username": "u", "auth.password": "p"}
    helpers._pass_headers(conf, {"Authorization": "Bearer tok"})
    assert (conf["auth.username"], "auth.bearer" in conf) == ("u", False)

    c = OpenSearch(["http://es1.example:9200"], http_auth=("u", "p"))
    ix, _, _ = helpers._indexer_for(c, 500, 100 << 20, 0,
                                    {"opaque_id": "job-9", "api_key": ("id", "key"),
                                     "headers": {"securitytenant": "t"}})
    ix.close()
    with pytest.raises(ValueError, match="Only one of"):
        helpers._indexer_for(c, 500, 100 << 20, 0, {"http_auth": ("a", "b"), "api_key": "k"})


class _FrozenCreds:
    def __init__(self, key, secret, token=None):
        self.access_key, self.secret_key, self.token = key, secret, token


class _RefreshingCreds:
    """botocore's RefreshableCredentials as opensearch-py reads them: frozen."""
    def __init__(self):
        self.frozen = 0

    def get_frozen_credentials(self):
        self.frozen += 1
        return _FrozenCreds("AKIDROTATED", "secret-%d" % self.frozen, "tok-%d" % self.frozen)


def test_client_conf_takes_an_aws_signer():
    """A client made with opensearch-py's AWS SigV4 signer (for Amazon
    OpenSearch Service or Serverless) raised TypeError: the library could not
    sign. Its region, service and credentials go to the auth.aws.* keys now,
    refreshable credentials frozen as opensearch-py freezes them."""
    from opensearchpy import (AWSV4SignerAuth, RequestsAWSV4SignerAuth, RequestsHttpConnection,
                              Urllib3AWSV4SignerAuth)

    for signer, kw in ((AWSV4SignerAuth, {"connection_class": RequestsHttpConnection}),
                       (RequestsAWSV4SignerAuth, {"connection_class": RequestsHttpConnection}),
                       (Urllib3AWSV4SignerAuth, {})):
        c = OpenSearch(["https://search-x.eu-west-1.es.amazonaws.com:443"],
                       http_auth=signer(_FrozenCreds("AKIDEXAMPLE", "s3cr3t"), "eu-west-1"), **kw)
        conf = helpers.client_conf(c)
        assert {k: v for k, v in conf.items() if k.startswith("auth.")} == {
            "auth.aws.region": "eu-west-1", "auth.aws.service": "es",
            "auth.aws.access_key_id": "AKIDEXAMPLE", "auth.aws.secret_access_key": "s3cr3t"}
        # the domain's endpoint alone: its nodes' addresses are private
        assert conf["topology.discovery"] == "false"
    creds = _RefreshingCreds()
    c = OpenSearch(["http://es1.example:9200"],
                   http_auth=Urllib3AWSV4SignerAuth(creds, "us-east-1", "aoss"))
    conf = helpers.client_conf(c)
    assert (conf["auth.aws.service"], conf["auth.aws.secret_access_key"],
            conf["auth.aws.session_token"]) == ("aoss", "secret-1", "tok-1")
    # a call's signer in place of the client's basic credentials
    c = OpenSearch(["http://es1.example:9200"], http_auth=("u", "p"))
    ix, _, _ = helpers._indexer_for(
        c, 500, 100 << 20, 0,
        {"http_auth": Urllib3AWSV4SignerAuth(creds, "eu-west-1")})
    ix.close()
    with pytest.raises(TypeError, match="basic, API key, bearer or AWS SigV4"):
        helpers.client_conf(OpenSearch(["http://es1.example:9200"],
                                       http_auth=lambda *a: {}))


def _fault_proxy(port, *faults):
    """tests/faultproxy.py on port in front of the cluster, with faults;
    a generator for a fixture: yields (url, log path)."""
    import os
    import subprocess
    import tempfile
    from conftest import URL

    # the source tree's (tests/python.test runs an installed copy of these tests)
    src = os.environ.get("ESBULK_PY_SRC") or os.path.join(os.path.dirname(__file__), "..")
    proxy = os.path.join(src, "..", "tests", "faultproxy.py")
    d = tempfile.mkdtemp()
    pidfile, log = os.path.join(d, "pid"), os.path.join(d, "log")
    p = subprocess.Popen(["/usr/bin/python3", proxy, "--listen", str(port), "--upstream", URL,
                          "--pidfile", pidfile, "--log", log, "--max-seconds", "120"]
                         + list(faults), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(pidfile) and os.path.getsize(pidfile) > 0:
            break
        if p.poll() is not None:
            pytest.fail("the proxy did not start: %s" % p.stdout.read().decode())
        time.sleep(0.1)
    else:
        pytest.fail("the proxy did not start on port %d" % port)
    yield "http://127.0.0.1:%d" % port, log
    p.terminate()
    p.wait()


@pytest.fixture
def sigv4_proxy():
    """tests/faultproxy.py in front of the cluster, checking every request's
    AWS SigV4 signature with botocore (Debian's, for /usr/bin/python3), as
    Amazon OpenSearch Service does."""
    yield from _fault_proxy(19277, "--require-sigv4",
                            "AKIDPYTEST:py-s3cr3t:eu-west-1:es:py-tok/en=")


@pytest.fixture
def password_proxy():
    """tests/faultproxy.py in front of the cluster, answering 401 to any
    request without Basic credentials pyuser:rotated-pw."""
    import base64
    yield from _fault_proxy(19250, "--require-auth",
                            "Basic " + base64.b64encode(b"pyuser:rotated-pw").decode())


def test_indexer_credentials_function_rotates(password_proxy, make_index):
    """Indexer(credentials=f) takes its first credentials from f, calls it
    again while results are pulled once credentials_refresh_s has passed,
    and updates the live handle when they changed: a rotated password is
    the one sent from then on. What f raises, or credentials of another
    kind, come out of that poll and leave the credentials in use as they
    were; a close while f keeps failing ends, then raises what f raised."""
    url, log = password_proxy
    index = make_index()
    given = [("pyuser", "old-pw")]
    calls = []

    def creds():
        calls.append(time.monotonic())
        got = given[-1]
        if isinstance(got, Exception):
            raise got
        return got

    got = []

    def due_poll():
        """One pull with the credentials due (and not due again after)."""
        ix.credentials_refresh_s = 0.0
        try:
            ix.poll(0)
        finally:
            ix.credentials_refresh_s = 3600.0

    ix = esbulk.Indexer(url, credentials=creds, topology_discovery=False, on_result=got.append)
    with pytest.raises(OSError, match="gone for good"):
        assert len(calls) == 1
        ix.add(index, {"n": 0}, id="0")
        ix.flush()
        assert got[0].status == 401 and not got[0].ok, got[0]
        assert len(calls) == 1  # not due yet (every credentials_refresh_s, a minute)
        given.append({"username": "pyuser", "password": "rotated-pw"})
        due_poll()
        assert len(calls) == 2
        ix.add(index, {"n": 1}, id="1")
        ix.flush()
        assert got[1].ok, got[1]
        # a failing source, then another kind: raised, the password kept
        given.append(OSError("vault sealed"))
        with pytest.raises(OSError, match="vault sealed"):
            due_poll()
        given.append({"api_key": "a2V5"})
        with pytest.raises(esbulk.ConfigError, match="the kind of credentials cannot change"):
            due_poll()
        ix.add(index, {"n": 2}, id="2")
        ix.flush()
        assert got[2].ok, got[2]
        assert len(calls) == 4
        # due at every pull, failing every time: close still ends
        given.append(OSError("gone for good"))
        ix.credentials_refresh_s = 0.0
        ix.add(index, {"n": 3}, id="3")
        ix.close()
    assert ix.close() == 0 and len(got) == 4 and got[3].ok, got
    assert count(index) == 3
    with open(log) as f:
        text = f.read()
    assert "old-pw" not in text and "rotated-pw" not in text


def test_indexer_credentials_function_misuse(url):
    """credentials= with other credentials, not a function, or a function
    giving something else than credentials: refused, saying why; nothing
    it returned is repeated."""
    with pytest.raises(esbulk.ConfigError, match="auth.username too"):
        esbulk.Indexer(url, credentials=lambda: ("u", "p"), auth_username="v")
    with pytest.raises(esbulk.ConfigError, match="credentials and aws_credentials"):
        esbulk.Indexer(url, credentials=lambda: ("u", "p"),
                       aws_credentials=_FrozenCreds("AKID", "s"), auth_aws_region="eu-west-1")
    with pytest.raises(TypeError, match="a function"):
        esbulk.Indexer(url, credentials=("u", "p"))
    for bad, why in ((None, "NoneType"), ("u:p", "str"), (("u",), "tuple"),
                     ({"user": "u"}, "'user'"), ({"api_key": 5}, "int for 'api_key'"),
                     ({"api_key": ""}, "no credentials")):
        with pytest.raises(TypeError, match=why) as e:
            esbulk.Indexer(url, credentials=lambda: bad)
        assert "u:p" not in str(e.value)
    # the library's own checks: a header injection refused, its value not said
    with pytest.raises(esbulk.ConfigError) as e:
        esbulk.Indexer(url, credentials=lambda: {"bearer": "tok\r\nX-Evil: 1"})
    assert "X-Evil" not in str(e.value)
    with esbulk.Indexer(url, credentials=lambda: {"auth.api_key": "a2V5"}) as ix:
        assert len(ix) == 0


def test_indexer_credentials_failing_at_every_pull_let_results_through():
    """A credentials function due at every pull (credentials_refresh_s 0)
    that raises every time: the results still come through, so an add
    blocked on a full buffer gets its room, adds every document and then
    raises it; close ends and raises it too."""
    import threading
    calls = [0]

    def flaky():
        calls[0] += 1
        if calls[0] > 1:
            raise OSError("vault sealed")
        return ("u", "p")

    got = []
    # nothing listens on port 1: each request fails at once, freeing room
    ix = esbulk.Indexer("http://127.0.0.1:1", credentials=flaky, block=True,
                        topology_discovery=False, retry_max=0, buffer_max_docs=10,
                        on_result=got.append)
    ix.credentials_refresh_s = 0.0
    raised = []

    def add():
        try:
            ix.add_many("creds-flaky", [{"n": i} for i in range(50)])
        except OSError as e:
            raised.append(e)

    t = threading.Thread(target=add, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the blocked add never got room"
    assert len(raised) == 1 and "vault sealed" in str(raised[0]), raised
    with pytest.raises(OSError, match="vault sealed"):
        ix.close()
    assert ix.close() == 0
    assert len(got) == 50 and not any(r.ok for r in got)
    assert calls[0] > 2


def test_bulk_signed_for_aws(sigv4_proxy, make_index):
    """helpers.bulk with a client signed for Amazon OpenSearch Service gives
    opensearch-py's answer, each side's requests checked by botocore in the
    proxy; with a wrong secret, nothing is indexed and the service's 403 is
    said."""
    from opensearchpy import RequestsAWSV4SignerAuth, RequestsHttpConnection

    url, log = sigv4_proxy
    index = make_index()
    good = _FrozenCreds("AKIDPYTEST", "py-s3cr3t", "py-tok/en=")
    client = OpenSearch([url], http_auth=RequestsAWSV4SignerAuth(good, "eu-west-1"),
                        connection_class=RequestsHttpConnection)
    acts = [{"_index": index, "_id": str(i), "n": i} for i in range(500)]
    assert helpers.bulk(client, acts) == peer.bulk(client, acts) == (500, [])
    assert count(index) == 500
    with open(log) as f:
        text = f.read()
    assert "FAULT sigv4" not in text
    # every request through the proxy (none straight to a node): ours and the peer's
    assert text.count("POST /_bulk") >= 2, text
    bad = OpenSearch([url], http_auth=RequestsAWSV4SignerAuth(
        _FrozenCreds("AKIDPYTEST", "wrong", "py-tok/en="), "eu-west-1"),
        connection_class=RequestsHttpConnection)
    more = [{"_index": index, "_id": "x%d" % i, "n": i} for i in range(20)]
    n, errors = helpers.bulk(bad, more, raise_on_error=False, raise_on_exception=False)
    assert n == 0 and len(errors) == 20
    assert all(list(e.values())[0]["status"] == 403 for e in errors), errors[0]
    assert "signature" in str(errors[0])
    assert count(index) == 500


class _Rotating:
    """Refreshable credentials that a role would give: wrong at first (as
    expired ones are), then the proxy's."""
    def __init__(self):
        self.frozen = 0

    def get_frozen_credentials(self):
        self.frozen += 1
        if self.frozen == 1:
            return _FrozenCreds("AKIDPYTEST", "expired", "old-token")
        return _FrozenCreds("AKIDPYTEST", "py-s3cr3t", "py-tok/en=")


def test_indexer_refreshes_aws_credentials(sigv4_proxy, make_index):
    """Indexer(aws_credentials=...) signs with refreshable credentials read
    again (frozen) while results are pulled, and updates the live handle
    when they changed (esbulk_auth_update): a run outlives credentials that
    expire. update_auth() refuses credentials of another kind."""
    url, log = sigv4_proxy
    index = make_index()
    creds = _Rotating()
    with esbulk.Indexer(url, aws_credentials=creds, auth_aws_region="eu-west-1") as ix:
        assert creds.frozen == 1
        got = []
        ix.add(index, {"n": 0}, id="0", on_result=got.append)
        ix.flush()
        assert got[0].status == 403 and "security token" in got[0].reason
        assert creds.frozen == 1  # not due yet (every aws_refresh_s, a minute)
        # due: pulled results read the credentials again, the role's new ones
        ix.aws_refresh_s = 0.0
        ix.poll(0)
        assert creds.frozen == 2
        ix.add(index, {"n": 1}, id="1", on_result=got.append)
        ix.flush()
        assert got[1].ok, got[1]
        with pytest.raises(esbulk.ConfigError, match="the kind of credentials cannot change"):
            ix.update_auth(auth_username="u", auth_password="p")
        with pytest.raises(esbulk.ConfigError, match="needs auth.aws.access_key_id"):
            ix.update_auth(**{"auth.aws.region": "eu-west-1"})
    assert count(index) == 1


def test_helpers_refresh_a_signers_credentials(sigv4_proxy, make_index, monkeypatch):
    """helpers.bulk with a signer over refreshable credentials reads them
    again while it runs, as opensearch-py's signer does for each request."""
    from opensearchpy import RequestsAWSV4SignerAuth, RequestsHttpConnection

    url, _ = sigv4_proxy
    index = make_index()
    creds = _Rotating()
    creds.frozen = 1  # already past the expired set
    monkeypatch.setattr(esbulk.Indexer, "aws_refresh_s", 0.0)
    client = OpenSearch([url], http_auth=RequestsAWSV4SignerAuth(creds, "eu-west-1"),
                        connection_class=RequestsHttpConnection)
    acts = [{"_index": index, "_id": str(i), "n": i} for i in range(300)]
    before = creds.frozen
    assert helpers.bulk(client, acts, chunk_size=50) == (300, [])
    assert creds.frozen > before + 1  # read at the start, and again while it ran
    assert count(index) == 300


def test_bulk_with_a_calls_opaque_id_indexes(client, make_index):
    """helpers.bulk(client, actions, opaque_id=...) as opensearch-py takes it."""
    index = make_index()
    acts = [{"_index": index, "_id": str(i), "n": i} for i in range(10)]
    assert helpers.bulk(client, acts, opaque_id="py-call",
                        headers={"X-Other": "1"}) == peer.bulk(client, acts, opaque_id="py-call")
    assert count(index) == 10
