"""esbulk.helpers as a drop-in for each peer's helpers module, the peer as the
oracle: every case runs once through the peer's helpers and once through
esbulk's, on the same real server with the same client object, and the
outcomes are compared. opensearch-py's cases run against the OpenSearch
cluster (ESBULK_TEST_URL), elasticsearch-py's against the Elasticsearch one
(ESBULK_TEST_ES_URL, tests/cluster/ensure.sh elasticsearch).

The cases are those the peers' own helper suites cover (bulk,
streaming_bulk, parallel_bulk, expand_action, the module's names), written
here: the peers' sdists on PyPI carry no tests (opensearch-py 3.2.0's
MANIFEST.in prunes them, elasticsearch 8.19.3's sdist holds the package
alone), so their own test files cannot be fetched at test time.
"""
import asyncio
import inspect
import json
import os
import re
import time
import urllib.error
import urllib.request
import uuid
from unittest import mock

import pytest

import esbulk
from esbulk import _bulk, helpers

OS_URL = os.environ.get("ESBULK_TEST_URL", "http://127.0.0.1:19200").rstrip("/")
ES_URL = os.environ.get("ESBULK_TEST_ES_URL", "http://127.0.0.1:19210").rstrip("/")
PEERS = ["opensearchpy", "elasticsearch"]


class Peer:
    """One peer: its helpers module, a client of it on its server, and
    indices made there (deleted after the test)."""

    def __init__(self, name):
        self.name = name
        if name == "opensearchpy":
            import opensearchpy
            from opensearchpy import exceptions
            self.helpers = opensearchpy.helpers
            self.url = OS_URL
            self.client = opensearchpy.OpenSearch([OS_URL], timeout=120)
            self.bad_request = exceptions.RequestError
        else:
            import elasticsearch
            import elasticsearch.helpers
            self.helpers = elasticsearch.helpers
            self.url = ES_URL
            self.client = elasticsearch.Elasticsearch(ES_URL, request_timeout=120)
            self.bad_request = elasticsearch.BadRequestError
        self.made = []

    def http(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        pause = 0.2
        for attempt in range(30):
            req = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    return resp.status, json.loads(resp.read() or b"null")
            except urllib.error.HTTPError as e:
                if e.code != 429 or attempt == 29:
                    return e.code, json.loads(e.read() or b"null")
            time.sleep(pause)
            pause = min(pause * 2, 5.0)
        raise AssertionError("unreachable")

    def index(self, tag=""):
        """A new index name: the index is made by the first write to it
        (by the peer's helpers or ours alike), with one shard and "a" an
        integer (TEMPLATE): making and waiting for each was most of these
        tests' time on a loaded machine."""
        if self.name not in TEMPLATED:
            st, body = self.http("PUT", "/_index_template/pytest-peers", TEMPLATE)
            assert st == 200, body
            TEMPLATED.add(self.name)
        name = "pytest-peers-%s-%s-%s" % (self.name, tag, uuid.uuid4().hex[:8])
        self.made.append(name)
        return name

    def count(self, index):
        self.http("POST", "/%s/_refresh" % index)
        st, body = self.http("GET", "/%s/_count" % index)
        if st == 404:  # nothing was written: never made
            return 0
        assert st == 200, body
        return body["count"]

    def cleanup(self):
        for name in self.made:
            self.http("DELETE", "/" + name)


TEMPLATE = {"index_patterns": ["pytest-peers-*"], "priority": 500,
            "template": {"settings": {"number_of_shards": 1, "number_of_replicas": 0},
                         "mappings": {"properties": {"a": {"type": "integer"}}}}}
TEMPLATED = set()  # the peers whose server has TEMPLATE


@pytest.fixture(params=PEERS)
def peer(request):
    p = Peer(request.param)
    yield p
    p.cleanup()


@pytest.fixture
def es():
    p = Peer("elasticsearch")
    yield p
    p.cleanup()


def norm(obj, index=None):
    """An outcome with what differs between two runs taken out: the index
    name, seq_no / primary_term / version / shards, a server error reduced
    to its type and reason, an exception object to its class name, status
    and text."""
    if isinstance(obj, BaseException):
        errors = getattr(obj, "errors", None)
        if isinstance(errors, list):  # BulkIndexError: its message and items
            return ["exception", type(obj).__name__, obj.args[0], norm(errors, index)]
        return ["exception", type(obj).__name__, getattr(obj, "status_code", None),
                norm(str(obj), index)]
    if isinstance(obj, dict):
        if "type" in obj and "reason" in obj:
            return {k: norm(v, index) for k, v in obj.items() if k in ("type", "reason")}
        return {k: norm(v, index) for k, v in obj.items()
                if k not in ("_seq_no", "_primary_term", "_shards", "_version",
                             "forced_refresh")}
    if isinstance(obj, (list, tuple)):
        return [norm(v, index) for v in obj]
    if isinstance(obj, str):
        # an _id the server made (20 characters of base64url)
        obj = AUTO_ID.sub("<auto>", obj)
        return obj.replace(index, "INDEX") if index else obj
    return obj


AUTO_ID = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])")


def both(peer, case):
    """case(h, index) through the peer's helpers and through esbulk's, each
    on an index of its own: (peer's outcome, esbulk's, peer's count,
    esbulk's count), the outcomes normalized (an exception raised is an
    outcome too)."""
    out = []
    for h in (peer.helpers, helpers):
        index = peer.index("p" if h is peer.helpers else "e")
        # esbulk's run goes through libesbulk (an Indexer), not the peer's
        made = []
        real = _bulk.Indexer

        def indexer(*args, **kwargs):
            made.append(1)
            return real(*args, **kwargs)
        with mock.patch.object(_bulk, "Indexer", indexer):  # where the helpers make theirs
            try:
                got = case(h, index)
            except Exception as e:  # the outcome of the case: compared
                got = ["raised", e]
        assert bool(made) == (h is helpers)
        out.append((norm(got, index), peer.count(index)))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def docs(index, n, bad=()):
    return [{"_index": index, "_id": str(i), "a": "x" if i in bad else i} for i in range(n)]


# ---- what each peer's suite asks of bulk / streaming_bulk / parallel_bulk

CASES = {
    "all_documents_get_inserted": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], ({"_id": str(x), "a": x} for x in range(100)), index=i)),
    "bulk_single_item": lambda h, i: h.bulk(CLIENT[0], [{"_id": "1", "a": 42}], index=i),
    "stats_only": lambda h, i: h.bulk(CLIENT[0], ({"a": x} for x in range(100)), index=i,
                                      stats_only=True),
    "errors_are_reported": lambda h, i: h.bulk(CLIENT[0], [{"a": 42}, {"a": "c", "_id": "42"}],
                                               index=i, raise_on_error=False),
    "error_is_raised": lambda h, i: h.bulk(CLIENT[0], [{"a": 42}, {"a": "c"}], index=i),
    "all_errors_of_a_chunk": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], [{"a": "b", "_id": "1"}, {"a": "c", "_id": "2"}], index=i)),
    "errors_counted_stats_only": lambda h, i: h.bulk(
        CLIENT[0], [{"a": 42}, {"a": "c"}], index=i, stats_only=True, raise_on_error=False),
    "ignore_status_tuple": lambda h, i: h.bulk(CLIENT[0], [{"a": 42}, {"a": "c"}], index=i,
                                               ignore_status=(400,)),
    "ignore_status_list": lambda h, i: h.bulk(CLIENT[0], [{"a": 42}, {"a": "c"}], index=i,
                                              ignore_status=[400]),
    "ignore_status_int": lambda h, i: h.bulk(CLIENT[0], [{"a": 42}, {"a": "c"}], index=i,
                                             ignore_status=400),
    "ignore_other_status": lambda h, i: h.bulk(CLIENT[0], [{"a": 42}, {"a": "c"}], index=i,
                                               ignore_status=(444,)),
    "different_op_types": lambda h, i: (
        h.bulk(CLIENT[0], [{"_id": "45", "a": 1}, {"_id": "42", "a": 2}], index=i),
        list(h.streaming_bulk(CLIENT[0], [
            {"_index": i, "_id": "47", "a": 3},
            {"_op_type": "delete", "_index": i, "_id": "45"},
            {"_op_type": "update", "_index": i, "_id": "42", "doc": {"a": 42}},
            {"_op_type": "create", "_index": i, "_id": "47", "a": 4}],
            raise_on_error=False))),
    "yield_ok_false": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], docs(i, 50, (3, 40)), raise_on_error=False, yield_ok=False)),
    "chunks_by_count": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], docs(i, 25, (7, 12)), chunk_size=5, raise_on_error=False)),
    "chunks_by_bytes": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], docs(i, 25, (7, 12)), max_chunk_bytes=200, raise_on_error=False)),
    "raise_stops_at_the_failing_chunk": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], docs(i, 30, (12,)), chunk_size=10)),
    "parallel_bulk": lambda h, i: sorted(h.parallel_bulk(
        CLIENT[0], docs(i, 200, (5,)), chunk_size=50, raise_on_error=False),
        key=lambda r: int(r[1]["index"]["_id"])),
    "parallel_bulk_raises": lambda h, i: list(h.parallel_bulk(
        CLIENT[0], docs(i, 10, (5,)), chunk_size=50, thread_count=1)),
    "string_documents": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], ['{"a": 1}', '{"a": 2}'], index=i)),
    "unicode": lambda h, i: list(h.streaming_bulk(
        CLIENT[0], [{"_index": i, "_id": "\u017e\u00e9", "t": "\u65e5\u672c"}])),
    "refresh_and_pipeline_none": lambda h, i: h.bulk(
        CLIENT[0], docs(i, 3), refresh=True, pipeline=None),
}
CLIENT = [None]  # the case's client (set by test_same_outcomes_as_the_peer)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_outcomes_as_the_peer(peer, case):
    CLIENT[0] = peer.client
    got_peer, got_ours, n_peer, n_ours = both(peer, CASES[case])
    assert got_ours == got_peer
    if case == "raise_stops_at_the_failing_chunk":
        # the chunks esbulk had handed to the library are still sent
        assert n_ours >= n_peer
    else:
        assert n_ours == n_peer


def test_errors_module_and_bulk_index_error_of_both_peers(peer):
    """helpers.errors is a module with BulkIndexError and ScanError, as the
    peers'; what esbulk raises for a failed document is caught by the
    ``except`` of either peer, through any of their names."""
    import elasticsearch.helpers as es_helpers
    import opensearchpy.helpers as os_helpers
    index = peer.index()
    for catch in (helpers.errors.BulkIndexError, helpers.BulkIndexError,
                  esbulk.BulkIndexError, peer.helpers.errors.BulkIndexError,
                  os_helpers.BulkIndexError, os_helpers.errors.BulkIndexError,
                  es_helpers.BulkIndexError):
        try:
            helpers.bulk(peer.client, [{"_index": index, "a": "not a number"}])
        except catch as e:
            assert len(e.errors) == 1 and e.errors[0]["index"]["status"] == 400
        else:
            pytest.fail("no BulkIndexError")
    assert helpers.errors.ScanError is helpers.ScanError
    assert issubclass(helpers.ScanError, os_helpers.ScanError)
    assert issubclass(helpers.ScanError, es_helpers.ScanError)


EXPAND_INPUTS = [
    "whatever", b"raw", {"a": 1}, {"_index": "i", "_id": 1, "a": 1},
    {"_index": "i", "_type": "t", "_id": "1", "a": 1},
    {"_op_type": "update", "_index": "i", "_id": "1", "_source": ["a"], "doc": {"a": 1}},
    {"_op_type": "update", "_index": "i", "_id": "1", "_source": {"doc": {"a": 1}}},
    {"_op_type": "delete", "_index": "i", "_id": "1", "a": 1},
    {"_op_type": "create", "_routing": "r", "_version": 2, "_version_type": "external",
     "_if_seq_no": 1, "_if_primary_term": 1, "pipeline": "p", "_retry_on_conflict": 3,
     "_parent": "x", "_timestamp": 1, "_percolate": "*", "a": 1},
]


def test_expand_action_as_each_peer():
    """expand_action of the primary peer (opensearch-py's here), and, given
    a client, the helpers expand as that client's peer: elasticsearch-py
    makes a string bytes and keeps _type as a meta key."""
    import elasticsearch.helpers as es_helpers
    import opensearchpy.helpers as os_helpers
    for data in EXPAND_INPUTS:
        assert helpers.expand_action(data) == os_helpers.expand_action(data), data
        for name, mod in (("opensearchpy", os_helpers), ("elasticsearch", es_helpers)):
            assert helpers._expand(data, name) == mod.expand_action(data), (name, data)
    assert helpers._expand("whatever", "elasticsearch") == ({"index": {}}, b"whatever")
    assert helpers.expand_action("whatever") == ('{"index":{}}', "whatever")


def test_type_is_not_dropped_for_an_elasticsearch_client(es):
    """elasticsearch-py sends _type on the action line, which Elasticsearch 8
    refuses; ours dropped it and indexed the document. Now the document is
    refused (400, the server's reason), with both helpers nothing indexed."""
    index = es.index()
    acts = [{"_index": index, "_type": "_doc", "_id": "1", "a": 1}]
    with pytest.raises(es.bad_request) as peer_raised:
        list(es.helpers.streaming_bulk(es.client, acts))
    assert "unknown parameter [_type]" in str(peer_raised.value)
    got = list(helpers.streaming_bulk(es.client, acts, raise_on_error=False))
    assert got[0][0] is False and got[0][1]["index"]["status"] == 400, got
    assert "unknown parameter [_type]" in got[0][1]["index"]["error"]["reason"], got
    assert es.count(index) == 0


def test_an_action_without_an_index_fails_its_chunk_as_the_peers(peer):
    """No _index and no index=: the server refuses the peer's whole request
    (400, "index is missing"), raised as the peer's 400 class, or with
    raise_on_exception=False every action of that chunk a failed item. Ours
    raised ValueError before anything was sent."""
    def case(raise_on_exception, raise_on_error, ignore_status=()):
        def run(h, index):
            acts = ([{"_index": index, "_id": "a%d" % k, "a": k} for k in range(3)] +
                    [{"_id": "none", "a": 9}, {"_index": index, "_id": "b", "a": 1}] +
                    [{"_index": index, "_id": "c%d" % k, "a": k} for k in range(3)])
            return list(h.streaming_bulk(peer.client, acts, chunk_size=3,
                                         raise_on_exception=raise_on_exception,
                                         raise_on_error=raise_on_error,
                                         ignore_status=ignore_status))
        return run

    for flags in ((True, True), (False, False), (False, True), (True, True, 400)):
        got_peer, got_ours, n_peer, n_ours = both(peer, case(*flags))
        assert got_ours == got_peer, flags
        assert n_ours >= n_peer, flags
    # what an except of the peer's catches
    index = peer.index()
    with pytest.raises(peer.bad_request) as raised:
        helpers.bulk(peer.client, [{"a": 1}])
    assert raised.value.status_code == 400
    assert isinstance(raised.value, esbulk.TransportError)
    with pytest.raises(helpers.BulkIndexError) as raised2:
        helpers.bulk(peer.client, [{"a": 1}, {"_index": index, "a": 2}],
                     raise_on_exception=False)
    assert [e["index"]["status"] for e in raised2.value.errors] == [400, 400]
    assert isinstance(raised2.value.errors[0]["index"]["exception"], peer.bad_request)


def test_bulk_flush_sends_what_was_read_before_the_next_action(peer):
    """elasticsearch-py's BULK_FLUSH: among the actions, the chunk read so
    far is sent and its results yielded before the next action is read.
    Ours had no BULK_FLUSH, and the peer's one was an action (TypeError)."""
    import elasticsearch.helpers as es_helpers
    assert helpers.BULK_FLUSH is es_helpers.BULK_FLUSH
    index = peer.index()
    results = []
    seen_at_flush = []

    def gen():
        yield {"_index": index, "_id": "1", "a": 1}
        yield helpers.BULK_FLUSH
        seen_at_flush.extend(r[1]["index"]["_id"] for r in results)
        yield {"_index": index, "_id": "2", "a": 2}

    for r in helpers.streaming_bulk(peer.client, gen(), chunk_size=100):
        results.append(r)
    assert seen_at_flush == ["1"]
    assert [r[1]["index"]["_id"] for r in results] == ["1", "2"]
    assert peer.count(index) == 2


def test_bulk_flush_as_elasticsearch_py(es):
    def case(h, index):
        return list(h.streaming_bulk(es.client, [
            {"_index": index, "_id": "1", "a": 1}, es.helpers.BULK_FLUSH,
            {"_index": index, "_id": "2", "a": 2}, es.helpers.BULK_FLUSH]))
    got_peer, got_ours, n_peer, n_ours = both(es, case)
    assert got_ours == got_peer and n_ours == n_peer == 2


def test_retry_on_status_and_span_name_are_taken(es):
    """elasticsearch-py 8.16's retry_on_status and 8.15's span_name, which
    ours refused (TypeError)."""
    def case(h, index):
        return [list(h.streaming_bulk(es.client, docs(index, 5, (2,)), raise_on_error=False,
                                      retry_on_status=(429,), max_retries=2,
                                      initial_backoff=0, span_name="my.span")),
                list(h.streaming_bulk(es.client, docs(index, 2), retry_on_status=409)),
                h.bulk(es.client, docs(index, 2), retry_on_status=[429, 503])]
    got_peer, got_ours, n_peer, n_ours = both(es, case)
    assert got_ours == got_peer and n_ours == n_peer
    index = es.index()
    with pytest.raises(ValueError, match="cannot retry 409"):
        list(helpers.streaming_bulk(es.client, docs(index, 1), retry_on_status=(429, 409),
                                    max_retries=1))


def test_positional_arguments_in_each_peers_order(peer):
    """The two peers order streaming_bulk's parameters differently
    (elasticsearch-py puts flush_after_seconds before raise_on_error):
    positional arguments mean what the client's peer makes of them."""
    if peer.name == "elasticsearch":
        args = (10, 10 ** 8, None, False)  # ..., flush_after_seconds, raise_on_error
    else:
        args = (10, 10 ** 8, False)  # ..., raise_on_error

    def case(h, index):
        return list(h.streaming_bulk(peer.client, docs(index, 4, (1,)), *args))
    got_peer, got_ours, n_peer, n_ours = both(peer, case)
    assert got_ours == got_peer and n_ours == n_peer == 3
    assert [ok for ok, _ in got_ours] == [True, False, True, True]


def test_scan_reindex_and_scan_error_are_the_peers(peer):
    """scan, reindex and ScanError were missing: a program that also scans
    broke on switching the import."""
    index = peer.index()
    helpers.bulk(peer.client, docs(index, 30), refresh=True)
    ours = sorted(h["_id"] for h in helpers.scan(peer.client, index=index, size=7))
    theirs = sorted(h["_id"] for h in peer.helpers.scan(peer.client, index=index, size=7))
    assert ours == theirs == sorted(str(i) for i in range(30))
    target = peer.index("copy")
    if peer.name == "opensearchpy":
        assert helpers.reindex(peer.client, index, target) == (30, 0)
        assert peer.count(target) == 30
    else:
        # elasticsearch-py's reindex asks whether the target is a data
        # stream (GET _data_stream), which this test cluster's build does not
        # serve (405, not a NotFoundError): the peer raises, so do we
        results = []
        for h in (peer.helpers, helpers):
            try:
                results.append(h.reindex(peer.client, index, target))
            except Exception as e:
                results.append(norm(e))
        assert results[0] == results[1] and results[0][0] == "exception", results
    # a scroll answered with failed shards: ScanError, caught by either name
    first = peer.client.search(index=index, scroll="1m", size=5)
    broken = {"_scroll_id": first["_scroll_id"], "hits": {"hits": [{"_id": "x"}]},
              "_shards": {"successful": 1, "skipped": 0, "total": 2}}
    # (on the class: elasticsearch-py's scan calls a copy of the client)
    with mock.patch.object(type(peer.client), "scroll", return_value=broken):
        with pytest.raises(peer.helpers.ScanError) as raised:
            list(helpers.scan(peer.client, index=index, size=5, clear_scroll=False))
    assert isinstance(raised.value, helpers.ScanError) and raised.value.scroll_id
    peer.client.clear_scroll(scroll_id=first["_scroll_id"])


def test_async_helpers_are_the_peers():
    """async_bulk / async_streaming_bulk / async_scan / async_reindex are the
    peer's of the client (here mocks of each peer's async client, which the
    peer's own helper calls)."""
    import elasticsearch
    import opensearchpy
    answer = {"errors": False, "took": 1,
              "items": [{"index": {"_index": "i", "_id": "1", "status": 201}}]}
    # opensearch-py's AsyncOpenSearch needs aiohttp, which is not installed:
    # a mock of no class goes to the primary peer, opensearch-py
    client = mock.AsyncMock()
    client.transport = opensearchpy.OpenSearch(["http://127.0.0.1:1"]).transport
    client.bulk.return_value = answer
    got = asyncio.run(helpers.async_bulk(client, [{"_index": "i", "_id": "1", "a": 1}]))
    assert got == (1, []) and client.bulk.await_count == 1
    # by the client's peer
    es_client = mock.Mock(spec=elasticsearch.AsyncElasticsearch)  # (it needs aiohttp too)
    for name in ("async_bulk", "async_streaming_bulk", "async_scan", "async_reindex"):
        assert helpers._by_client(name, es_client) is getattr(elasticsearch.helpers, name)
        assert helpers._by_client(name, client) is getattr(opensearchpy.helpers, name)
    for name in ("async_bulk", "async_streaming_bulk", "async_scan", "async_reindex"):
        assert inspect.signature(getattr(helpers, name)) == \
            inspect.signature(getattr(opensearchpy.helpers, name)), name


@pytest.mark.parametrize("name", PEERS)
def test_names_are_a_superset_of_the_peers(name):
    """Every public name of the installed peer's helpers module is in
    dir(esbulk.helpers) and can be read from it; __all__ too."""
    import importlib
    mod = importlib.import_module(name + ".helpers")
    public = {n for n in dir(mod) if not n.startswith("_")}
    assert public <= set(dir(helpers)), public - set(dir(helpers))
    for n in public | set(mod.__all__):
        assert getattr(helpers, n) is not None, n
    assert set(mod.__all__) <= set(helpers.__all__)
    for n in ("bulk", "streaming_bulk", "parallel_bulk"):
        # the arguments of a call with this peer's client are bound as its
        # own function binds them (test_positional_arguments_in_each_peers_order)
        assert helpers._signature(name, n) == inspect.signature(getattr(mod, n)), n
    # what help() and inspect show: the primary peer's
    import opensearchpy.helpers as primary
    for n in ("bulk", "streaming_bulk", "parallel_bulk", "scan", "reindex"):
        assert inspect.signature(getattr(helpers, n)) == \
            inspect.signature(getattr(primary, n)), n


def test_a_client_whose_bulk_is_its_own_is_called_by_the_peers_helper(peer):
    """A mock client, or a wrapper of the user's with a bulk() of its own
    (to count, to fail on purpose): libesbulk would never call it, so such a
    call goes to the peer's own helper, which does. A real client's bulk is
    never called (libesbulk sends the requests)."""
    index = peer.index()
    calls = []
    real = peer.client

    class Wrapper:
        transport = real.transport
        _otel = getattr(real, "_otel", None)  # elasticsearch-py's helpers use it

        def options(self, **kwargs):  # elasticsearch-py's helpers call it
            return self

        def bulk(self, *args, **kwargs):
            calls.append(1)
            return real.bulk(*args, **kwargs)

    got = list(helpers.streaming_bulk(Wrapper(), docs(index, 4), chunk_size=2))
    assert [ok for ok, _ in got] == [True] * 4 and len(calls) == 2
    assert peer.count(index) == 4
    def answer(*args, **kwargs):
        body = {"errors": False, "took": 1,
                "items": [{"index": {"_index": index, "_id": "1", "status": 201}}]}
        # elasticsearch-py's: an ObjectApiResponse (.body)
        return mock.Mock(body=body) if peer.name == "elasticsearch" else body
    m = mock.MagicMock(spec=type(real))
    m.transport = real.transport
    m._otel = getattr(real, "_otel", None)
    if peer.name == "elasticsearch":
        m.options.return_value = m
    m.bulk.side_effect = answer
    assert helpers.bulk(m, [{"_index": index, "_id": "1", "a": 1}]) == (1, [])
    assert m.bulk.call_count == 1
    if peer.name == "opensearchpy":
        # (elasticsearch-py's helpers call a copy of the client, client.options():
        # a bulk patched onto the instance is not called by the peer either)
        with mock.patch.object(real, "bulk") as patched:
            patched.side_effect = answer
            assert helpers.bulk(real, [{"_index": index, "_id": "1", "a": 1}]) == (1, [])
            assert patched.call_count == 1
    # a real client is not: libesbulk sends the documents
    assert not esbulk._peers.calls_its_own_bulk(real)
    assert not esbulk._peers.calls_its_own_bulk(peer.url)
