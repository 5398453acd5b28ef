"""esbulk.Indexer against the real cluster."""
import collections
import os
import signal
import subprocess
import sys
import time
import urllib.parse

import pytest

import esbulk
from esbulk import helpers
from conftest import count, http

N = 100000


def test_100k_documents_each_exactly_one_result(url, make_index):
    index = make_index()
    seen = collections.Counter()
    failed = []

    def on_result(r):
        seen[r.context] += 1
        if not r.ok:
            failed.append(r)

    t0 = time.monotonic()
    # block: the adds outrun the cluster, and the buffer (sized by the
    # cluster: 36,000 documents here) fills; a full one serves results
    # until there is room instead of raising QueueFullError
    with esbulk.Indexer(url, on_result=on_result, flush_docs=2000, block=True) as ix:
        for start in range(0, N, 1000):
            ids = [str(i) for i in range(start, start + 1000)]
            added = ix.add_many(index, [{"n": i, "s": "doc %d" % i}
                                        for i in range(start, start + 1000)],
                                ids=ids, contexts=range(start, start + 1000))
            assert added == 1000
            ix.poll(0)
        assert ix.flush() == 0
        assert len(ix) == 0
        assert not ix._tokens  # per-document Python state is held only until its result
        st = ix.stats()
    print("100k through Indexer in %.1f s" % (time.monotonic() - t0))
    assert not failed, failed[:3]
    assert len(seen) == N and set(seen.values()) == {1}
    assert set(seen) == set(range(N))
    assert st["indexed"] == N and st["pending"] == 0
    # buffer.max.docs left at 0: 2 x (nodes x 2 in flight + max(nodes,
    # destinations)) x flush.docs, at least 10,000
    nodes = sum(1 for nd in st["nodes"] if not nd["seed"])
    assert nodes >= 3
    assert st["buffer_max_docs"] == max(10000, 2 * (nodes * 2 + max(nodes, st["destinations"])) * 2000)
    assert count(index) == N


def test_add_from_several_threads_while_one_polls(url, make_index):
    import threading
    index = make_index()
    seen = collections.Counter()
    errors = []

    def producer(t):
        try:
            for start in range(0, 5000, 250):
                ids = ["%d-%d" % (t, i) for i in range(start, start + 250)]
                ix.add_many(index, [{"n": i} for i in range(start, start + 250)], ids=ids,
                            contexts=ids)
                ix.add(index, {"n": start}, id="single-%d-%d" % (t, start),
                       context="single-%d-%d" % (t, start))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    with esbulk.Indexer(url, on_result=lambda r: seen.update([r.context])) as ix:
        threads = [threading.Thread(target=producer, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        while any(th.is_alive() for th in threads):
            ix.poll(0.05)
        for th in threads:
            th.join()
        assert ix.flush() == 0
    assert not errors
    assert len(seen) == 4 * (5000 + 20) and set(seen.values()) == {1}
    assert count(index) == 4 * (5000 + 20)


def test_mapping_errors_per_document_with_the_servers_reason(url, make_index):
    index = make_index()
    results = {}
    with esbulk.Indexer(url, on_result=lambda r: results.setdefault(r.id, []).append(r)) as ix:
        for i in range(200):
            ix.add(index, {"n": "not a number" if i % 50 == 7 else i}, id="d%d" % i)
        # str and bytes bodies are sent as they are
        ix.add(index, '{"n": 1000}', id="as-str")
        ix.add(index, b'{"n": 1001}', id="as-bytes")
        assert ix.flush() == 0
    assert len(results) == 202 and all(len(v) == 1 for v in results.values())
    bad = {k: v[0] for k, v in results.items() if not v[0].ok}
    assert sorted(bad) == ["d107", "d157", "d57", "d7"]
    for k, r in bad.items():
        assert r.outcome == "failed" and r.status == 400
        assert r.error_type == "mapper_parsing_exception"
        assert "failed to parse field [n]" in r.reason and k in r.reason
        assert r.item()["error"]["caused_by"]["type"] == "number_format_exception"
        assert r.cause_type == "number_format_exception" and r.cause_reason
        assert r.reason.endswith(" (caused by number_format_exception: %s)" % r.cause_reason)
        assert r.item()["error"]["reason"] == r.reason[:r.reason.index(" (caused by ")]
    assert results["as-str"][0].ok and results["as-bytes"][0].ok
    assert count(index) == 198


def test_exception_in_callback_surfaces_from_poll_and_no_result_is_lost(url, make_index):
    index = make_index()
    calls = []

    class Boom(Exception):
        pass

    def on_result(r):
        calls.append(r.id)
        if len(calls) == 5:
            raise Boom("from the callback")

    ix = esbulk.Indexer(url, on_result=on_result, flush_interval_ms=10)
    ix.add_many(index, [{"n": i} for i in range(100)], ids=[str(i) for i in range(100)])
    with pytest.raises(Boom):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ix.poll(0.1)
    assert len(calls) == 5
    # the rest are served by the next calls, each exactly once
    assert ix.flush(30) == 0
    ix.close()
    assert sorted(calls, key=int) == [str(i) for i in range(100)]


def test_exception_in_callback_surfaces_from_flush(url, make_index):
    index = make_index()
    ix = esbulk.Indexer(url, on_result=lambda r: 1 / 0)
    ix.add(index, {"n": 1}, id="1")
    with pytest.raises(ZeroDivisionError):
        ix.flush(30)
    assert ix.flush(30) == 0
    ix.close()


def test_queue_full_raises_buffer_error_then_block_waits(url, make_index):
    index = make_index()
    got = []
    ix = esbulk.Indexer(url, on_result=got.append, buffer_max_docs=10)
    for i in range(10):
        ix.add(index, {"n": i}, id=str(i))
    with pytest.raises(BufferError) as e:
        ix.add(index, {"n": 10}, id="10")
    assert isinstance(e.value, esbulk.QueueFullError)
    with pytest.raises(BufferError) as e:
        ix.add_many(index, [{"n": 11}], ids=["11"])
    assert e.value.accepted == 0
    assert ix.flush(30) == 0
    ix.add(index, {"n": 10}, id="10")  # room again
    ix.close()
    assert sorted(int(r.id) for r in got) == list(range(11))

    got.clear()
    with esbulk.Indexer(url, on_result=got.append, buffer_max_docs=10, block=True) as ix:
        ix.add_many(index, [{"n": i} for i in range(100, 400)],
                    ids=[str(i) for i in range(100, 400)])
        for i in range(400, 450):
            ix.add(index, {"n": i}, id=str(i))
    assert sorted(int(r.id) for r in got) == list(range(100, 450))
    assert all(r.ok for r in got)


def test_context_manager_closes_and_serves_everything(url, make_index):
    index = make_index()
    got = []
    with esbulk.Indexer(url, on_result=got.append, flush_interval_ms=60000) as ix:
        ix.add_many(index, ['{"n":%d}' % i for i in range(300)])
        assert len(ix) == 300
    assert len(got) == 300 and all(r.ok for r in got)
    assert len({r.id for r in got}) == 300  # generated ids, all distinct
    with pytest.raises(esbulk.EsbulkError):
        ix.add(index, {"n": 1})
    assert ix.close() == 0  # closing twice is a no-op
    assert count(index) == 300


def test_close_gives_undelivered_documents_their_result(make_index):
    got = []
    ix = esbulk.Indexer("http://127.0.0.1:1", on_result=got.append, connect_timeout_ms=100,
                        retry_max=1000, delivery_timeout_ms=0)  # it cannot end by itself
    ix.add("nowhere", {"n": 1}, id="1")
    assert ix.close(timeout=0.3) == 1
    assert len(got) == 1 and not got[0].ok and got[0].outcome in ("failed", "possibly")


@pytest.mark.parametrize("how", ["add_many", "add"])
def test_close_while_another_thread_adds_never_touches_a_freed_handle(how, monkeypatch):
    """close() from one thread while another's add waits for room (block=True,
    a full buffer, a cluster nothing listens on): the add raises "closed" and
    no call reaches the handle once it is freed (before, the add's next C
    call read the freed handle: garbage errors, or valgrind's invalid
    reads). Adds after close() has begun are refused the same way. The add
    calls are watched: one on a destroyed handle is recorded, not made."""
    import threading
    from esbulk import _indexer
    destroyed, misuse = set(), []
    real_destroy, real_add, real_batch = (_indexer.lib.esbulk_destroy,
                                          _indexer.lib.esbulk_add_opts, _indexer._add_batch_raw)

    def destroy(eb):
        destroyed.add(eb)
        real_destroy(eb)

    def watched(real):
        def call(eb, *a):
            if eb in destroyed:
                misuse.append(real)
                return esbulk._clib.ERR_INVALID_ARG
            return real(eb, *a)
        return call

    monkeypatch.setattr(_indexer.lib, "esbulk_destroy", destroy)
    monkeypatch.setattr(_indexer.lib, "esbulk_add_opts", watched(real_add))
    monkeypatch.setattr(_indexer, "_add_batch_raw", watched(real_batch))
    ix = esbulk.Indexer("http://127.0.0.1:1", block=True, buffer_max_docs=5, flush_docs=5,
                        connect_timeout_ms=100, retry_max=1000, retry_backoff_ms=5000,
                        delivery_timeout_ms=0)
    errors = []

    def producer():
        try:
            if how == "add_many":
                ix.add_many("i", [{"n": 1}] * 50)
            else:
                for i in range(50):
                    ix.add("i", {"n": i})
        except Exception as e:  # what the add raised
            errors.append(e)

    t = threading.Thread(target=producer)
    t.start()
    deadline = time.monotonic() + 10
    while len(ix) < 5 and time.monotonic() < deadline:  # the buffer is full: the add waits
        time.sleep(0.01)
    assert len(ix) == 5
    ix.close(0)
    t.join(10)
    assert not t.is_alive()
    assert destroyed and not misuse, misuse
    assert len(errors) == 1, errors
    e = errors[0]
    assert type(e) is esbulk.EsbulkError and e.code == esbulk._clib.ERR_CLOSED, repr(e)
    assert "closed" in str(e)
    if how == "add_many":
        assert e.accepted == 5  # the five before the buffer was full
    with pytest.raises(esbulk.EsbulkError, match="closed"):
        ix.add("i", {"n": 1})
    assert len(ix) == 0


def test_add_actions_refuses_a_parent_and_a_version_type_alone(url, make_index):
    """Indexer.add_actions took _parent as a meta key and dropped it (the
    child routed by its own _id), and a _version_type without _version was
    ignored: both are refused, as the helpers refuse them (400 items) and
    Indexer.add refuses version_type without version."""
    index = make_index()
    with esbulk.Indexer(url) as ix:
        with pytest.raises(esbulk.InvalidDocumentError, match="_parent"):
            ix.add_actions([{"_index": index, "_id": "c1", "_parent": "p1", "n": 1}])
        with pytest.raises(esbulk.InvalidDocumentError, match="version_type without version"):
            ix.add_actions([{"_index": index, "_id": "c2", "_version_type": "external", "n": 1}])
        ix.add_actions([{"_index": index, "_id": "c3", "_version": 3,
                         "_version_type": "external", "n": 1}])
    assert count(index) == 1


def test_library_warnings_go_to_the_esbulk_logger(caplog):
    """A cluster nothing listens on: the library's warnings come out of the
    "esbulk" logger as poll pulls the results, on the polling thread (the
    library never calls into Python)."""
    got = []
    caplog.set_level("WARNING", logger="esbulk")
    ix = esbulk.Indexer("http://127.0.0.1:1", on_result=got.append, connect_timeout_ms=100,
                        retry_max=1000, delivery_timeout_ms=0)
    ix.add("nowhere", {"n": 1}, id="1")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
            "127.0.0.1:1" in r.getMessage() for r in caplog.records):
        ix.poll(0.05)
    ix.close(timeout=0.3)
    mine = [r for r in caplog.records if r.name == "esbulk"]
    assert any(r.levelname == "WARNING" and "127.0.0.1:1" in r.getMessage()
               and "onnect" in r.getMessage() for r in mine), [r.getMessage() for r in mine]
    assert len(got) == 1


def test_per_document_options(url, make_index):
    index = make_index()
    res = {}

    def keep(r):
        res[r.context] = r

    with esbulk.Indexer(url, on_result=keep, result_meta=True) as ix:
        ix.add(index, {"n": 1}, id="v", version=5, version_type="external", context="v5")
        assert ix.flush(30) == 0
        ix.add(index, {"n": 2}, id="v", version=3, version_type="external", context="v3")
        ix.add(index, {"n": 3}, id="r", routing="user-7", context="routed")
        ix.add(index, {"n": 4}, id="c", op="create", context="create1")
        assert ix.flush(30) == 0
        ix.add(index, {"n": 5}, id="c", op="create", context="create2")
        ix.add(index, {"doc": {"n": 6}}, id="c", op="update", retry_on_conflict=3,
               context="update")
        ix.add(index, {"n": 7}, id="v", version=9, version_type="external_gte", context="v9")
        seq = res["create1"].seq_no
        ix.add(index, {"n": 8}, id="c", if_seq_no=seq + 100,
               if_primary_term=res["create1"].primary_term, context="stale_seq")
        ix.add({"_index": index, "_id": "a", "_version": 2, "_version_type": "external",
                "n": 9}, context="action")
        assert ix.flush(30) == 0
        ix.add(index, id="r", routing="user-7", op="delete", context="delete")
        with pytest.raises(ValueError):
            ix.add(index, {"n": 1}, id="x", version_type="external")  # no version
        # a condition on a document without an _id: refused, not sent under
        # a generated one (on which it would always hold)
        with pytest.raises(esbulk.InvalidDocumentError, match="external version needs an _id"):
            ix.add(index, {"n": 1}, version=5, version_type="external")
        with pytest.raises(esbulk.InvalidDocumentError, match="if_seq_no needs an _id"):
            ix.add(index, {"n": 1}, if_seq_no=1, if_primary_term=1)
    assert res["v5"].ok and res["v5"].version == 5
    assert res["v3"].status == 409 and res["v3"].error_type == \
        "version_conflict_engine_exception"
    assert not res["v3"].ok
    assert res["create1"].ok and res["create2"].status == 409
    assert res["update"].ok and res["update"].result == "updated"
    assert res["v9"].ok and res["v9"].version == 9
    assert res["stale_seq"].status == 409
    assert res["action"].ok and res["action"].version == 2
    assert res["delete"].ok and res["delete"].result == "deleted"
    st, body = http("GET", "/%s/_doc/v" % index)
    assert body["_source"] == {"n": 7} and body["_version"] == 9


def test_ctrl_c_interrupts_flush_and_a_later_flush_completes():
    got = []
    # a dead host: the flush cannot finish; Ctrl-C must stop it promptly
    ix = esbulk.Indexer("http://127.0.0.1:1", on_result=got.append, connect_timeout_ms=100,
                        delivery_timeout_ms=0, retry_max=1000, retry_backoff_ms=50)
    ix.add("nowhere", {"n": 1}, id="1")
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        signal.signal(signal.SIGALRM, lambda *a: os.kill(os.getpid(), signal.SIGINT))
        t0 = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            ix.flush()
        took = time.monotonic() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGINT, old)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert 0.4 < took < 2.0, took  # 0.5 s, plus at most one 0.2 s slice (and a loaded CI)
    assert got == []
    assert ix.flush(0.3) == 1   # a later flush runs normally (here: times out)
    assert ix.close(timeout=0) == 1
    assert len(got) == 1 and not got[0].ok and got[0].error_name


def test_conf_errors_name_the_key(url):
    with pytest.raises(esbulk.ConfigError) as e:
        esbulk.Indexer(url, no_such_key=1)
    assert "no.such.key" in str(e.value)
    with pytest.raises(ValueError) as e:
        esbulk.Indexer(url, **{"flush.docs": 0})
    assert "flush.docs" in str(e.value)
    ix = esbulk.Indexer(url, result_keep_body=True, retry_on_cluster_block=False)
    ix.close()


def test_library_not_found_error_names_what_was_tried(tmp_path):
    env = dict(os.environ, ESBULK_LIBRARY=str(tmp_path / "nope" / "libesbulk.so"))
    p = subprocess.run([sys.executable, "-c", "import esbulk; print(esbulk.library_path())"],
                       env=env, capture_output=True, text=True, cwd=str(tmp_path))
    if p.returncode == 0:  # a copy in the package or the system's was found instead
        assert "nope" not in p.stdout
    else:
        assert "ImportError" in p.stderr
        assert str(tmp_path / "nope" / "libesbulk.so") in p.stderr
        assert "find_library" in p.stderr


def test_results_read_one_field_at_a_time_gives_the_same(url, make_index, monkeypatch):
    """With a libesbulk without esbulk_results_read, results are read one
    accessor call per field: the same Results as the batch read's."""
    from esbulk import _clib

    def run(batch_read):
        monkeypatch.setattr(_clib, "HAVE_RESULTS_READ", batch_read)
        index = make_index()
        got = {}
        with esbulk.Indexer(url, on_result=lambda r: got.__setitem__(r.id, r)) as ix:
            ix.add_many(index, [{"n": "x" if i % 40 == 3 else i} for i in range(120)],
                        ids=["d%d" % i for i in range(120)])
            assert ix.flush() == 0
        return {k: (r.ok, r.outcome, r.error, r.op, r.status, r.error_type, r.result,
                    r.version, r.seq_no >= 0, r.primary_term, r.attempts, r.item()["status"],
                    r.index == index)
                for k, r in got.items()}

    batch, each = run(True), run(False)
    assert len(batch) == 120 and batch == each
    assert sum(not v[0] for v in batch.values()) == 3


def test_add_many_refuses_lists_of_other_lengths_before_the_c_call(url, make_index):
    """ids / routings / contexts shorter (or longer) than bodies: a
    ValueError and nothing added; the C call would read past the shorter
    arrays (garbage _ids, or a crash)."""
    index = make_index()
    got = []
    with esbulk.Indexer(url, on_result=got.append) as ix:
        for kw in ({"ids": ["a"]}, {"routings": ["r"] * 3}, {"contexts": [1]},
                   {"ids": ["a"] * 60}):
            with pytest.raises(ValueError) as e:
                ix.add_many(index, [{"n": i} for i in range(51)], **kw)
            assert "51 bodies" in str(e.value), e.value
            assert len(ix) == 0
        with pytest.raises(ValueError):
            ix.add_actions([{"_index": index, "n": 1}] * 3, contexts=[1])
        with pytest.raises(ValueError):  # the internal batch call checks too
            ix._add_batch(0, index.encode(), [b"a"], None, [b'{"n":1}', b'{"n":2}'], None,
                          None)
        assert len(ix) == 0
        ix.add_many(index, [{"n": 1}], ids=["ok"])
    assert [r.id for r in got] == ["ok"]


def test_close_serves_all_when_a_callback_raises(url, make_index):
    """A callback raising on the 2nd of 5 results inside close()'s flush: the
    other 3 are still served, the handle is freed, then the exception is
    re-raised (with and without a timeout)."""
    for timeout in (None, 30):
        index = make_index(("t%s" % timeout).lower())
        served = []

        def cb(r):
            served.append(r.id)
            if len(served) == 2:
                raise KeyError("callback failed on %s" % r.id)

        ix = esbulk.Indexer(url, on_result=cb, flush_interval_ms=60000)
        with pytest.raises(KeyError):
            with ix:
                for i in range(5):
                    ix.add(index, {"n": i}, id=str(i))
                assert len(ix) == 5
        assert sorted(served) == ["0", "1", "2", "3", "4"]
        assert ix._eb is None and len(ix) == 0
        assert ix.close(timeout) == 0  # closed: a no-op
        assert count(index) == 5


def test_an_indexer_never_closed_warns_of_the_documents_it_drops(caplog):
    """Garbage-collected unclosed: a ResourceWarning, and a WARNING on the
    "esbulk" logger with how many documents were dropped (no result)."""
    import gc
    import warnings
    caplog.set_level("WARNING", logger="esbulk")
    ix = esbulk.Indexer("http://127.0.0.1:1", connect_timeout_ms=100, retry_max=1000,
                        delivery_timeout_ms=0)  # nothing can be delivered
    ix.add_many("nowhere", [{"n": i} for i in range(3)])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        del ix
        gc.collect()
    assert any(issubclass(x.category, ResourceWarning) and "esbulk.Indexer" in str(x.message)
               for x in w), [str(x.message) for x in w]
    msgs = [r.getMessage() for r in caplog.records
            if r.name == "esbulk" and r.levelname == "WARNING"]
    assert any("without close()" in m and "3 document(s)" in m for m in msgs), msgs


_EXIT_SCRIPT = """
import sys, esbulk
url, index, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
esbulk.Indexer.exit_timeout = float(sys.argv[4])
ix = esbulk.Indexer(url, flush_interval_ms=600000, flush_docs=100000,
                    connect_timeout_ms=100, retry_max=1000, delivery_timeout_ms=0)
ix.add_many(index, [{"n": i} for i in range(n)])
print(len(ix))
"""


def test_an_indexer_open_at_exit_is_closed_in_bounded_time(url, make_index, tmp_path):
    """A module-level Indexer still open when the program ends: its buffered
    documents are sent (all of them, here) with a warning; against a cluster
    that cannot be reached, the exit waits exit_timeout, not forever."""
    index = make_index()
    script = tmp_path / "exit_unclosed.py"
    script.write_text(_EXIT_SCRIPT)
    p = subprocess.run([sys.executable, str(script), url, index, "2500", "60"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["2500"]
    assert "not closed at exit" in p.stderr and "2500 document(s)" in p.stderr, p.stderr
    assert count(index) == 2500
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(script), "http://127.0.0.1:1", "nowhere", "3",
                        "0.5"], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    assert "not closed at exit" in p.stderr and "3 document(s) were not delivered" in p.stderr, \
        p.stderr
    assert took < 30, took  # 0.5 s of waiting plus the interpreter's start


_ENCODE_SCRIPT = r"""
import sys
if sys.argv[1] == "json":
    sys.modules["orjson"] = None  # as if not installed
import datetime, decimal, json, uuid
import esbulk
from esbulk import helpers
from esbulk._json import encode_body
assert esbulk.JSON_ENCODER == sys.argv[1], esbulk.JSON_ENCODER
doc = {"dt": datetime.datetime(2024, 1, 2, 3, 4, 5, 600000), "d": datetime.date(2024, 1, 2),
       "tz": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
       "t": datetime.time(3, 4, 5), "u": uuid.UUID(int=1), "dec": decimal.Decimal("1.5"),
       "s": "é"}
out = {"doc": json.loads(encode_body(doc))}
class Thing: pass
for bad in ({1, 2}, Thing(), b"x"):
    try:
        encode_body({"v": bad})
        out[type(bad).__name__] = "accepted"
    except TypeError as e:
        out[type(bad).__name__] = "TypeError"
print(json.dumps(out))
"""


@pytest.mark.parametrize("encoder", ["orjson", "json"])
def test_dicts_are_encoded_as_opensearch_py_encodes_them(tmp_path, encoder):
    """datetime/date/time in ISO 8601 (a date field, not text), UUID as str,
    Decimal as float; a set or an object of another class is a TypeError
    (opensearch-py: SerializationError), never its str(). The same with
    orjson and with json."""
    import datetime
    import decimal
    import json
    import uuid
    from opensearchpy.serializer import JSONSerializer
    script = tmp_path / "enc.py"
    script.write_text(_ENCODE_SCRIPT)
    p = subprocess.run([sys.executable, str(script), encoder], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    peer = json.loads(JSONSerializer().dumps(
        {"dt": datetime.datetime(2024, 1, 2, 3, 4, 5, 600000), "d": datetime.date(2024, 1, 2),
         "tz": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
         "u": uuid.UUID(int=1), "dec": decimal.Decimal("1.5"), "s": "é"}))
    assert {k: v for k, v in out["doc"].items() if k != "t"} == peer
    assert out["doc"]["dt"] == "2024-01-02T03:04:05.600000" and out["doc"]["dec"] == 1.5
    assert out["doc"]["t"] == "03:04:05"  # opensearch-py refuses a time; orjson encodes it
    assert (out["set"], out["Thing"], out["bytes"]) == ("TypeError",) * 3, out


@pytest.mark.parametrize("keep", [True, 1, "1", "yes"])
def test_result_keep_body_any_true_value_of_the_library(url, make_index, keep):
    """result_keep_body=1 / "1" / "yes" are true to the library (it keeps the
    bodies): Result.body has the failed document's body."""
    index = make_index()
    res = []
    with esbulk.Indexer(url, on_result=res.append, result_keep_body=keep) as ix:
        ix.add(index, {"n": "not a number"}, id="1")
        ix.add(index, {"n": 2}, id="2")
    byid = {r.id: r for r in res}
    assert not byid["1"].ok and byid["1"].body == b'{"n":"not a number"}'
    assert byid["2"].ok and byid["2"].body is None
    with esbulk.Indexer(url, on_result=res.append, result_keep_body="no") as ix:
        ix.add(index, {"n": "not a number"}, id="3")
    assert not res[-1].ok and res[-1].body is None


def test_configuration_refused_by_esbulk_new_is_a_config_error(url):
    """Found only when the handle is made (a URL it cannot use, no URL,
    credentials that conflict): ConfigError, a ValueError, as the keys'
    own errors; a message names the key once."""
    for hosts, conf in (("ftp://x", {}), ("", {}),
                        (url, {"auth_username": "u", "auth_password": "p",
                               "auth_api_key": "k"})):
        with pytest.raises(esbulk.ConfigError) as e:
            esbulk.Indexer(hosts, **conf)
        assert isinstance(e.value, ValueError) and "esbulk_new" in str(e.value)
    with pytest.raises(esbulk.ConfigError) as e:
        esbulk.Indexer(url, flush_docs=0)
    assert str(e.value).count("flush.docs") == 1, str(e.value)


def test_item_of_a_result_not_indexed_keeps_the_servers_meta(url, make_index):
    """A delete of a missing document (404 not_found) and any refused item
    carry the _version, result, _seq_no, _primary_term the server sent, as
    opensearch-py's items do (not _shards: libesbulk does not keep it)."""
    from esbulk._result import _make_result
    r = _make_result((1, -19, 3, 404, 1, 0, 7, 1, 3, "i", "x", "not_found"),
                     (None, None, None, None, None), None, None)
    it = r.item()
    assert (it["_version"], it["result"], it["_seq_no"], it["_primary_term"], it["status"]) \
        == (3, "not_found", 7, 1, 404)
    index = make_index()
    got = list(helpers.streaming_bulk(url, [{"_index": index, "_id": "a", "n": 1},
                                            {"_op_type": "delete", "_index": index, "_id": "z"}],
                                      raise_on_error=False))
    it = got[1][1]["delete"]
    assert not got[1][0] and it["status"] == 404 and it["result"] == "not_found"
    assert it["_version"] >= 1 and it["_seq_no"] >= 0 and it["_primary_term"] >= 1


def test_library_path_is_the_full_path_of_the_file_loaded(tmp_path):
    """Found by name on the search path (find_library: "libesbulk.so.0"),
    library_path() still gives the file's full path."""
    lib = os.environ.get("ESBULK_LIBRARY") or esbulk.library_path()
    env = {k: v for k, v in os.environ.items() if k != "ESBULK_LIBRARY"}
    env["LD_LIBRARY_PATH"] = os.path.dirname(os.path.abspath(lib))
    p = subprocess.run([sys.executable, "-c", "import esbulk; print(esbulk.library_path())"],
                       env=env, capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert p.returncode == 0, p.stderr
    got = p.stdout.strip()
    assert os.path.isabs(got) and os.path.samefile(got, lib), got
    assert os.path.isabs(esbulk.library_path())


def test_ctrl_c_in_a_with_block_closes_at_once():
    """KeyboardInterrupt in `with Indexer(...)`, documents that cannot be
    delivered: __exit__ closes at once (each gets its result: not
    delivered), not after their 15 s of retries, and the interrupt goes on."""
    got = []
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with esbulk.Indexer("http://127.0.0.1:1", on_result=got.append, connect_timeout_ms=100,
                            retry_max=1000, delivery_timeout_ms=15000) as ix:
            for i in range(20):
                ix.add("nowhere", {"n": i}, id=str(i))
            raise KeyboardInterrupt()
    took = time.monotonic() - t0
    assert took < 10, took
    assert len(got) == 20 and all(r.outcome != "indexed" for r in got)


def test_hosts_may_be_one_host_dict(url, make_index):
    """Indexer(hosts={"host": ..., "port": ...}): one opensearch-py host dict,
    as one URL string is one host, not the dict's keys taken as host names
    ("host,port": every document failed on http://host:9200)."""
    index = make_index()
    u = urllib.parse.urlsplit(url)
    res = []
    with esbulk.Indexer({"host": u.hostname, "port": u.port}, on_result=res.append) as ix:
        ix.add(index, {"n": 1}, id="1")
    assert [(r.ok, r.reason) for r in res] == [(True, None)]
    assert esbulk._conf.hosts_to_urls({"host": "h", "port": 1, "scheme": "https"}) == \
        "https://h:1"


def test_host_dicts_make_the_urls_opensearch_py_makes():
    """A url_prefix without its leading slash ("es": "http://h:1es") and an
    IPv6 host ("http://::1:9200") made URLs that do not work; opensearch-py
    makes "http://h:1/es" and "http://[::1]:9200"."""
    from opensearchpy import OpenSearch
    for h in ({"host": "h", "port": 1, "url_prefix": "es"},
              {"host": "h", "url_prefix": "/es/"}, {"host": "::1", "port": 9200},
              {"host": "h", "use_ssl": True, "port": 443}):
        peer_urls = [c.host + c.url_prefix
                     for c in OpenSearch([h]).transport.connection_pool.connections]
        assert esbulk._conf.hosts_to_urls([h]) == peer_urls[0], h


def test_add_of_an_action_dict_refuses_arguments_it_would_ignore(url, make_index):
    """add({"_index": ..., ...}, id=..., op=...): the dict is the whole
    action; the other arguments were silently ignored (an op="create" became
    an index that overwrote). They raise TypeError; on_result and context
    still apply."""
    index = make_index()
    res = []
    with esbulk.Indexer(url, on_result=res.append) as ix:
        for kw in ({"id": "2"}, {"op": "create"}, {"routing": "r"}, {"version": 3},
                   {"pipeline": "p"}):
            with pytest.raises(TypeError, match=list(kw)[0]):
                ix.add({"_index": index, "_id": "1", "n": 1}, **kw)
        with pytest.raises(TypeError, match="body"):
            ix.add({"_index": index, "_id": "1"}, {"n": 1})
        ix.add({"_index": index, "_id": "1", "n": 1}, context="c")
    assert [(r.id, r.context, r.ok) for r in res] == [("1", "c", True)]


@pytest.mark.parametrize("how", ["add_many", "add", "add_actions"])
def test_a_callback_raising_while_a_blocked_add_waits_does_not_cut_the_add(url, make_index,
                                                                          how):
    """block=True: add() serves callbacks while it waits for room. A callback
    that raised there stopped the add midway: add_many raised the callback's
    exception with no way to tell how many documents were added (10 of 50
    here; added again, the rest would be duplicates). Now every document of
    the call is added, then the exception is raised."""
    index = make_index()
    seen = []

    def cb(r):
        seen.append(r.id)
        if len(seen) == 3:
            raise RuntimeError("callback fails")
    ids = [str(i) for i in range(50)]
    ix = esbulk.Indexer(url, on_result=cb, block=True, buffer_max_docs=10, flush_docs=5)
    with pytest.raises(RuntimeError, match="callback fails"):
        if how == "add_many":
            ix.add_many(index, [{"n": i} for i in range(50)], ids=ids,
                        contexts=list(range(50)))
        elif how == "add_actions":
            ix.add_actions([{"_index": index, "_id": i, "n": 1} for i in ids])
        else:
            for i in ids:
                ix.add(index, {"n": 1}, id=i, context=i)
    if how == "add":  # the add that met it added its document; the rest go on
        for i in ids[len(seen) + len(ix):]:
            ix.add(index, {"n": 1}, id=i, context=i)
    assert ix.close() == 0
    assert sorted(seen, key=int) == ids  # each exactly once
    assert not ix._tokens
    assert count(index) == 50


def test_server_error_takes_the_cause_off_the_end_exactly():
    from esbulk._result import _server_error
    quoted = "Preview of field's value: 'x (caused by a_exception: b)'"
    e = _server_error(("mapper_parsing_exception",
                       quoted + " (caused by my_error: y (caused by z_exception: w))", None,
                       "my_error", "y (caused by z_exception: w)"))
    assert e == {"type": "mapper_parsing_exception", "reason": quoted,
                 "caused_by": {"type": "my_error", "reason": "y (caused by z_exception: w)"}}
    # a cause without a type: "error" in the reason, None apart
    e = _server_error(("t", "r (caused by error: c)", None, None, "c"))
    assert e == {"type": "t", "reason": "r", "caused_by": {"type": None, "reason": "c"}}
    # no cause: the reason whole, however it reads
    assert _server_error(("t", "r (caused by x_exception: c)", None, None, None)) == {
        "type": "t", "reason": "r (caused by x_exception: c)"}
