#!/usr/bin/env python3
"""tests/ffi_smoke.py LIBESBULK_SO URL

A smoke test of the bulk engine across an FFI boundary: Python's ctypes only
(no compiled glue), against a real cluster. Two handles:

  A: esbulk_add, the single-result callback (esbulk_conf_set_result_cb);
  B: esbulk_add_batch, the batch callback (esbulk_conf_set_results_cb),
     polled from a second Python thread.

and a third, C, with no callback at all: 10,000 documents drained with the
pull API (esbulk_poll_results in batches of 256, esbulk_results_release).

Checks that every accepted document gets exactly one result matched by its
opaque, that refusals at add time return the right code and deliver nothing,
that a per-document server refusal (400 mapper_parsing_exception) comes back
FAILED with its type and reason, that callbacks run only on the thread that
called poll/flush/close, that esbulk_add works from inside a callback, that
esbulk_stats_json agrees, and that the index holds exactly what was indexed.

Standard library only. Prints PASS:/FAIL: per check and "N passed, N failed";
exits 1 on any failure.
"""
import ctypes
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from ctypes import (CFUNCTYPE, POINTER, byref, c_char_p, c_int32, c_int64, c_size_t,
                    c_uint32, c_void_p)

INDEX = "ffi-smoke"
PULL_INDEX = "ffi-smoke-pull"
PULL_DOCS = 10000
PULL_BATCH = 256
WATCHDOG_S = 240

# esbulk_err_t values (include/esbulk.h)
ESBULK_OK = 0
ESBULK_ERR_INVALID_ARG = -1
ESBULK_ERR_INVALID_UTF8 = -3
ESBULK_ERR_ITEM = -19
ESBULK_ERR_INVALID_JSON = -18
ESBULK_ERR_IN_CALLBACK = -22
ESBULK_ERR_RESULTS_HELD = -23
ESBULK_OP_INDEX = 0
ERR_NAMES = {0: "ESBULK_OK", -1: "ESBULK_ERR_INVALID_ARG", -3: "ESBULK_ERR_INVALID_UTF8",
             -16: "ESBULK_ERR_CLOSED", -18: "ESBULK_ERR_INVALID_JSON", -19: "ESBULK_ERR_ITEM"}
ESBULK_OUTCOME_INDEXED = 0
ESBULK_OUTCOME_FAILED = 1

passed = 0
failed = 0


def native_threads():
    """The process's thread count (the library's own threads included)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return -1


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("PASS: %s" % what)
    else:
        failed += 1
        print("FAIL: %s%s" % (what, (": " + detail) if detail else ""))
    sys.stdout.flush()
    return ok


def watchdog():
    print("FAIL: watchdog: no progress after %d s (deadlock?)" % WATCHDOG_S)
    print("%d passed, %d failed" % (passed, failed + 1))
    sys.stdout.flush()
    os._exit(1)


# ---------------------------------------------------------------------------
# The library, every function with its exact C signature.

LOG_CB = CFUNCTYPE(None, c_int32, c_char_p, c_char_p, c_void_p)
RESULT_CB = CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)
RESULTS_CB = CFUNCTYPE(None, c_void_p, POINTER(c_void_p), c_size_t, c_void_p)


def load(path):
    lib = ctypes.CDLL(path)

    def fn(name, restype, *argtypes):
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = list(argtypes)

    fn("esbulk_version", c_uint32)
    fn("esbulk_version_str", c_char_p)
    fn("esbulk_err2str", c_char_p, c_int32)
    fn("esbulk_free", None, c_void_p)
    fn("esbulk_conf_new", c_void_p)
    fn("esbulk_conf_set", c_int32, c_void_p, c_char_p, c_char_p, c_char_p, c_size_t)
    fn("esbulk_conf_destroy", None, c_void_p)
    fn("esbulk_conf_set_log_cb", None, c_void_p, LOG_CB)
    fn("esbulk_conf_set_opaque", None, c_void_p, c_void_p)
    fn("esbulk_conf_set_result_cb", None, c_void_p, RESULT_CB)
    fn("esbulk_conf_set_results_cb", None, c_void_p, RESULTS_CB)
    fn("esbulk_new", c_void_p, c_void_p, c_char_p, c_size_t)
    fn("esbulk_add", c_int32, c_void_p, c_int32, c_char_p, c_char_p, c_size_t, c_char_p,
       c_size_t, c_char_p, c_size_t, c_void_p, c_char_p, c_size_t)
    fn("esbulk_add_batch", c_int32, c_void_p, c_size_t, POINTER(c_int32), POINTER(c_char_p),
       POINTER(c_char_p), POINTER(c_size_t), POINTER(c_char_p), POINTER(c_size_t),
       POINTER(c_char_p), POINTER(c_size_t), POINTER(c_void_p), POINTER(c_size_t), c_char_p,
       c_size_t)
    fn("esbulk_poll", c_int32, c_void_p, c_int32)
    fn("esbulk_flush", c_int32, c_void_p, c_int32)
    fn("esbulk_close", c_int32, c_void_p, c_int32)
    fn("esbulk_destroy", None, c_void_p)
    fn("esbulk_pending", c_int64, c_void_p)
    fn("esbulk_poll_results", c_int32, c_void_p, POINTER(c_void_p), c_size_t, c_int32)
    fn("esbulk_results_release", c_int32, c_void_p)
    fn("esbulk_stats_json", c_void_p, c_void_p)
    fn("esbulk_result_opaque", c_void_p, c_void_p)
    fn("esbulk_result_outcome", c_int32, c_void_p)
    fn("esbulk_result_err", c_int32, c_void_p)
    fn("esbulk_result_op", c_int32, c_void_p)
    fn("esbulk_result_index", c_char_p, c_void_p)
    fn("esbulk_result_id", c_char_p, c_void_p)
    fn("esbulk_result_status", c_int32, c_void_p)
    fn("esbulk_result_error_type", c_char_p, c_void_p)
    fn("esbulk_result_error_reason", c_char_p, c_void_p)
    fn("esbulk_result_error_cause_type", c_char_p, c_void_p)
    fn("esbulk_result_error_cause_reason", c_char_p, c_void_p)
    fn("esbulk_result_result", c_char_p, c_void_p)
    fn("esbulk_result_seq_no", c_int64, c_void_p)
    fn("esbulk_result_primary_term", c_int64, c_void_p)
    fn("esbulk_result_version", c_int64, c_void_p)
    fn("esbulk_result_attempts", c_int32, c_void_p)
    return lib


def dec(b):
    return None if b is None else b.decode("utf-8")


# ---------------------------------------------------------------------------
# The cluster, over plain HTTP.

def http(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


# ---------------------------------------------------------------------------
# One handle's bookkeeping.

class Handle:
    def __init__(self, name, tag):
        self.name = name
        self.tag = tag              # the conf opaque, a small integer
        self.eb = None
        self.expected = {}          # opaque -> {"id": given id or None, "bad": bool}
        self.results = {}           # opaque -> list of result dicts
        self.unknown = []           # results with an opaque we never gave
        self.errors = []            # problems seen inside callbacks
        self.cb_calls = 0
        self.cb_results = 0         # results seen (across all callback calls)
        self.poller = None          # thread ident of the current poll/flush/close caller
        self.wrong_thread = []
        self.wrong_eb = 0
        self.wrong_tag = 0
        self.requeue_trigger = None  # opaque whose result triggers a re-queue
        self.requeue_opaque = None
        self.requeue_id = None
        self.meta = False           # result.meta set: the answer's _seq_no etc. asked for
        self.requeue_rc = None
        self.requeue_errstr = None

    def served(self):
        return sum(len(v) for v in self.results.values()) + len(self.unknown)


lib = None
handles = {}
log_lines = []
log_lock = threading.Lock()


def on_log(level, facility, message, opaque):
    # Runs on any thread (the I/O thread included): only append, never call in.
    with log_lock:
        log_lines.append("%d %s: %s" % (level, dec(facility), dec(message)))


def read_result(r):
    return {
        "opaque": lib.esbulk_result_opaque(r),
        "outcome": lib.esbulk_result_outcome(r),
        "err": lib.esbulk_result_err(r),
        "op": lib.esbulk_result_op(r),
        "index": dec(lib.esbulk_result_index(r)),
        "id": dec(lib.esbulk_result_id(r)),
        "status": lib.esbulk_result_status(r),
        "error_type": dec(lib.esbulk_result_error_type(r)),
        "reason": dec(lib.esbulk_result_error_reason(r)),
        "cause_type": dec(lib.esbulk_result_error_cause_type(r)),
        "cause_reason": dec(lib.esbulk_result_error_cause_reason(r)),
        "result": dec(lib.esbulk_result_result(r)),
        "seq_no": lib.esbulk_result_seq_no(r),
        "primary_term": lib.esbulk_result_primary_term(r),
        "version": lib.esbulk_result_version(r),
        "attempts": lib.esbulk_result_attempts(r),
    }


def take_result(h, eb, r):
    """Common part of both callbacks: record one result, maybe re-queue."""
    if threading.get_ident() != h.poller:
        h.wrong_thread.append(threading.get_ident())
    if eb != h.eb:
        h.wrong_eb += 1
    res = read_result(r)
    h.cb_results += 1
    op = res["opaque"]
    if op in h.expected:
        h.results.setdefault(op, []).append(res)
    else:
        h.unknown.append(res)
    if op is not None and op == h.requeue_trigger and h.requeue_rc is None:
        # Re-queue from inside the callback: esbulk_add must not deadlock.
        body = json.dumps({"n": 424242, "requeued_by": h.name}).encode()
        errstr = ctypes.create_string_buffer(256)
        idb = h.requeue_id.encode()
        h.expected[h.requeue_opaque] = {"id": h.requeue_id, "bad": False}
        rc = lib.esbulk_add(eb, ESBULK_OP_INDEX, INDEX.encode(), idb, len(idb), None, 0, body,
                            len(body), h.requeue_opaque, errstr, len(errstr))
        h.requeue_rc = rc
        h.requeue_errstr = dec(errstr.value)
        if rc != ESBULK_OK:
            del h.expected[h.requeue_opaque]


def on_result(eb, r, opaque):
    h = handles.get(opaque)
    if h is None:
        return
    try:
        h.cb_calls += 1
        take_result(h, eb, r)
    except Exception as e:  # an exception must not vanish into ctypes
        h.errors.append("single callback: %r" % (e,))


def on_results(eb, results, count, opaque):
    h = handles.get(opaque)
    if h is None:
        return
    try:
        h.cb_calls += 1
        for i in range(count):
            take_result(h, eb, results[i])
    except Exception as e:
        h.errors.append("batch callback: %r" % (e,))


# Kept referenced for the whole run: the library holds these pointers.
LOG_FN = LOG_CB(on_log)
RESULT_FN = RESULT_CB(on_result)
RESULTS_FN = RESULTS_CB(on_results)


def make_handle(h, url, batch):
    errstr = ctypes.create_string_buffer(512)
    conf = lib.esbulk_conf_new()
    if not check(bool(conf), "%s: esbulk_conf_new" % h.name):
        return False
    settings = [("urls", url), ("flush.docs", "50"), ("flush.interval.ms", "200"),
                ("log.level", "6")]
    if batch:
        # B asks for the answer's _seq_no, _primary_term and _version; A
        # keeps the default, which does not (its results say -1)
        settings += [("body.validate", "true"), ("result.meta", "true")]
        h.meta = True
    ok = True
    for k, v in settings:
        rc = lib.esbulk_conf_set(conf, k.encode(), v.encode(), errstr, len(errstr))
        if rc != ESBULK_OK:
            ok = False
            check(False, "%s: esbulk_conf_set %s=%s" % (h.name, k, v),
                  "%d %s" % (rc, dec(errstr.value)))
    check(ok, "%s: esbulk_conf_set of %s" % (h.name, ", ".join(k for k, _ in settings)))
    rc = lib.esbulk_conf_set(conf, b"no.such.key", b"1", errstr, len(errstr))
    check(rc == -4 and errstr.value, "%s: unknown conf key -> ESBULK_ERR_UNKNOWN_KEY" % h.name,
          "rc %d errstr %r" % (rc, errstr.value))
    lib.esbulk_conf_set_log_cb(conf, LOG_FN)
    lib.esbulk_conf_set_opaque(conf, h.tag)
    if batch:
        lib.esbulk_conf_set_results_cb(conf, RESULTS_FN)
    else:
        lib.esbulk_conf_set_result_cb(conf, RESULT_FN)
    h.eb = lib.esbulk_new(conf, errstr, len(errstr))
    lib.esbulk_conf_destroy(conf)  # the handle keeps its own copy
    return check(bool(h.eb), "%s: esbulk_new" % h.name, dec(errstr.value))


def drive(h, want, seconds):
    """esbulk_poll on the calling thread until h has `want` results."""
    h.poller = threading.get_ident()
    end = time.monotonic() + seconds
    mismatch = []
    while h.served() < want and time.monotonic() < end:
        before = h.cb_results
        n = lib.esbulk_poll(h.eb, 100)
        if n != h.cb_results - before:
            mismatch.append((n, h.cb_results - before))
    check(not mismatch, "%s: esbulk_poll returns the number of results it served" % h.name,
          repr(mismatch[:5]))
    return h.served() >= want


def flush(h, what):
    h.poller = threading.get_ident()
    rc = lib.esbulk_flush(h.eb, 60000)
    check(rc == ESBULK_OK, "%s: esbulk_flush %s" % (h.name, what),
          "%d %s" % (rc, dec(lib.esbulk_err2str(rc))))


# ---------------------------------------------------------------------------
# Adding

BAD_BODY = json.dumps({"n": "not-a-number"}).encode()


def add_a(h):
    """Handle A: esbulk_add, one document per call."""
    eb = h.eb
    errstr = ctypes.create_string_buffer(512)
    index = INDEX.encode()
    opaque = 1
    plan = []
    for i in range(110):
        given = None if i % 3 == 0 else "a-%d" % i  # every third: library-generated id
        plan.append((given, json.dumps({"n": i, "h": "A"}).encode(), False))
    plan.insert(37, (u"a-\u00fcn\u00efc\u00f6de-\u2713", json.dumps({"n": 1000}).encode(), False))
    plan.insert(55, ("a-bad", BAD_BODY, True))
    refused_ok = True
    for given, body, bad in plan:
        idb = None if given is None else given.encode("utf-8")
        rc = lib.esbulk_add(eb, ESBULK_OP_INDEX, index, idb, len(idb) if idb else 0, None, 0,
                            body, len(body), opaque, errstr, len(errstr))
        if rc != ESBULK_OK:
            refused_ok = False
            check(False, "A: esbulk_add doc opaque %d" % opaque, "%d %s" % (rc, dec(errstr.value)))
        else:
            h.expected[opaque] = {"id": given, "bad": bad}
        opaque += 1
        if opaque == 20:
            # interleave the refusals with accepted documents
            for what, rc_want, args in refusals_a(index):
                errstr.value = b""
                rc = lib.esbulk_add(eb, *args, 7000 - rc_want, errstr, len(errstr))
                check(rc == rc_want and errstr.value,
                      "A: esbulk_add refuses %s: %s" % (what, ERR_NAMES[rc_want]),
                      "got %d (%s), errstr %r" % (rc, dec(lib.esbulk_err2str(rc)), errstr.value))
    check(refused_ok, "A: esbulk_add accepted all %d well-formed documents" % len(plan))
    # re-queue from the callback of the first accepted, valid document
    h.requeue_trigger = 1
    h.requeue_opaque = 9001
    h.requeue_id = "a-requeued"


def refusals_a(index):
    bad_id = b"a-\xff\xfe-bad"
    body = b'{"n": 1}'
    return [
        ("a body that is not a JSON object", ESBULK_ERR_INVALID_JSON,
         (ESBULK_OP_INDEX, index, b"a-never-1", 9, None, 0, b"not json at all", 15)),
        ("an empty body", ESBULK_ERR_INVALID_JSON,
         (ESBULK_OP_INDEX, index, b"a-never-2", 9, None, 0, None, 0)),
        ("an _id that is not valid UTF-8", ESBULK_ERR_INVALID_UTF8,
         (ESBULK_OP_INDEX, index, bad_id, len(bad_id), None, 0, body, len(body))),
        ("an empty index name", ESBULK_ERR_INVALID_ARG,
         (ESBULK_OP_INDEX, b"", b"a-never-3", 9, None, 0, body, len(body))),
    ]


def add_batch(h, docs, errstr):
    """esbulk_add_batch of docs [(opaque, id or None, body bytes)]; returns (rc, accepted)."""
    n = len(docs)
    ops = (c_int32 * n)(*([ESBULK_OP_INDEX] * n))
    indices = (c_char_p * n)(*([INDEX.encode()] * n))
    ids = (c_char_p * n)()
    id_lens = (c_size_t * n)()
    bodies = (c_char_p * n)()
    body_lens = (c_size_t * n)()
    opaques = (c_void_p * n)()
    for i, (op, given, body) in enumerate(docs):
        if given is not None:
            b = given if isinstance(given, bytes) else given.encode("utf-8")
            ids[i] = b
            id_lens[i] = len(b)
        bodies[i] = body
        body_lens[i] = len(body)
        opaques[i] = op
    accepted = c_size_t(12345)
    errstr.value = b""
    rc = lib.esbulk_add_batch(h.eb, n, ops, indices, ids, id_lens, None, None, bodies, body_lens,
                              opaques, byref(accepted), errstr, len(errstr))
    return rc, accepted.value


def add_b(h):
    """Handle B: esbulk_add_batch, including batches that stop at a refused document."""
    errstr = ctypes.create_string_buffer(512)
    opaque = 1

    def doc(i, given=None, body=None, bad=False):
        nonlocal opaque
        d = (opaque, given, body if body is not None else json.dumps({"n": i, "h": "B"}).encode(),
             bad)
        opaque += 1
        return d

    def accept(docs):
        for op, given, _, bad in docs:
            h.expected[op] = {"id": dec(given) if isinstance(given, bytes) else given, "bad": bad}

    # 1: 60 documents, every fourth without an id, one refused by the server
    first = [doc(i, None if i % 4 == 0 else "b-%d" % i) for i in range(30)]
    first.append(doc(0, "b-bad", BAD_BODY, True))
    first += [doc(i, None if i % 4 == 0 else "b-%d" % i) for i in range(30, 59)]
    first.append(doc(0, u"b-\u65e5\u672c\u8a9e", json.dumps({"n": 2000}).encode()))
    rc, acc = add_batch(h, [d[:3] for d in first], errstr)
    check(rc == ESBULK_OK and acc == len(first),
          "B: esbulk_add_batch of %d documents accepted all" % len(first),
          "rc %d accepted %d errstr %r" % (rc, acc, errstr.value))
    accept(first[:acc])

    # 2: stops at an invalid JSON body (body.validate=true on B: a brace-wrapped non-JSON)
    second = [doc(100 + i, "b-%d" % (100 + i)) for i in range(3)]
    second.append(doc(0, "b-never-json", b'{"n": oops}'))
    second += [doc(200 + i, "b-%d" % (200 + i)) for i in range(2)]
    rc, acc = add_batch(h, [d[:3] for d in second], errstr)
    check(rc == ESBULK_ERR_INVALID_JSON and acc == 3 and errstr.value,
          "B: esbulk_add_batch stops at an invalid JSON body: ESBULK_ERR_INVALID_JSON, accepted 3",
          "rc %d (%s) accepted %d errstr %r" % (rc, dec(lib.esbulk_err2str(rc)), acc,
                                               errstr.value))
    accept(second[:acc])
    rest = second[acc + 1:] if rc != ESBULK_OK else []

    # 3: the rest of 2, then a document whose _id is not valid UTF-8
    third = rest + [doc(300, "b-300"), doc(0, b"b-\xc3\x28-bad"), doc(301, "b-301")]
    rc, acc = add_batch(h, [d[:3] for d in third], errstr)
    want = len(rest) + 1
    check(rc == ESBULK_ERR_INVALID_UTF8 and acc == want and errstr.value,
          "B: esbulk_add_batch stops at an invalid UTF-8 _id: ESBULK_ERR_INVALID_UTF8, "
          "accepted %d" % want,
          "rc %d (%s) accepted %d errstr %r" % (rc, dec(lib.esbulk_err2str(rc)), acc,
                                               errstr.value))
    accept(third[:acc])
    if rc != ESBULK_OK and acc + 1 < len(third):
        tail = third[acc + 1:]
        rc, acc = add_batch(h, [d[:3] for d in tail], errstr)
        check(rc == ESBULK_OK and acc == len(tail), "B: esbulk_add_batch of the tail",
              "rc %d accepted %d" % (rc, acc))
        accept(tail[:acc])

    # 4: an empty batch is fine and accepts nothing
    empty_acc = c_size_t(7)
    rc = lib.esbulk_add_batch(h.eb, 0, (c_int32 * 1)(), (c_char_p * 1)(), None, None, None, None,
                              None, None, None, byref(empty_acc), errstr, len(errstr))
    check(rc == ESBULK_OK and empty_acc.value == 0, "B: esbulk_add_batch of 0 documents",
          "rc %d accepted %d" % (rc, empty_acc.value))

    h.requeue_trigger = 2
    h.requeue_opaque = 9002
    h.requeue_id = "b-requeued"


# ---------------------------------------------------------------------------
# Checking the results

ID_RE = re.compile(r"^[A-Za-z0-9_-]{20}$")


def check_results(h):
    name = h.name
    check(not h.errors, "%s: callbacks raised nothing" % name, "; ".join(h.errors[:3]))
    check(not h.wrong_thread,
          "%s: callbacks ran only on the thread that called poll/flush/close" % name,
          "%d results on other threads %r" % (len(h.wrong_thread), set(h.wrong_thread)))
    check(h.wrong_eb == 0, "%s: callbacks got their own esbulk_t *" % name,
          "%d with another" % h.wrong_eb)
    check(not h.unknown, "%s: no result with an opaque that was never given" % name,
          repr([(u["opaque"], u["id"], u["err"]) for u in h.unknown[:5]]))
    missing = [op for op in h.expected if op not in h.results]
    dup = {op: len(v) for op, v in h.results.items() if len(v) != 1}
    check(not missing and not dup,
          "%s: each of %d accepted documents got exactly one result, matched by opaque" %
          (name, len(h.expected)),
          "missing %r, duplicated %r" % (missing[:10], dup))
    check(h.requeue_rc == ESBULK_OK,
          "%s: esbulk_add from inside the result callback returned ESBULK_OK" % name,
          "rc %r errstr %r" % (h.requeue_rc, h.requeue_errstr))
    rq = h.results.get(h.requeue_opaque, [])
    check(len(rq) == 1 and rq[0]["outcome"] == ESBULK_OUTCOME_INDEXED and
          rq[0]["id"] == h.requeue_id,
          "%s: the document re-queued from the callback got its own INDEXED result" % name,
          repr(rq))

    bad_problems, good_problems, gen_ids, given_mismatch = [], [], [], []
    indexed = 0
    for op, exp in h.expected.items():
        for r in h.results.get(op, [])[:1]:
            if exp["bad"]:
                if not (r["outcome"] == ESBULK_OUTCOME_FAILED and r["err"] == ESBULK_ERR_ITEM and
                        r["status"] == 400 and r["error_type"] == "mapper_parsing_exception" and
                        r["reason"] and r["id"] == exp["id"] and r["seq_no"] == -1 and
                        # {"n": "not-a-number"}: the server's detail is its cause
                        r["cause_type"] == "number_format_exception" and r["cause_reason"] and
                        r["reason"].endswith(" (caused by number_format_exception: %s)" %
                                             r["cause_reason"])):
                    bad_problems.append(r)
                continue
            if r["outcome"] == ESBULK_OUTCOME_INDEXED:
                indexed += 1
            probs = []
            if r["outcome"] != ESBULK_OUTCOME_INDEXED or r["err"] != ESBULK_OK:
                probs.append("outcome %d err %d" % (r["outcome"], r["err"]))
            if r["status"] != 201:
                probs.append("status %d" % r["status"])
            if r["result"] != "created":
                probs.append("result %r" % r["result"])
            if h.meta and (r["seq_no"] < 0 or r["primary_term"] < 1 or r["version"] != 1):
                probs.append("seq_no %d primary_term %d version %d" %
                             (r["seq_no"], r["primary_term"], r["version"]))
            if not h.meta and (r["seq_no"], r["primary_term"], r["version"]) != (-1, -1, -1):
                probs.append("seq_no %d primary_term %d version %d" %
                             (r["seq_no"], r["primary_term"], r["version"]))
            if r["index"] != INDEX or r["op"] != ESBULK_OP_INDEX or r["attempts"] < 1:
                probs.append("index %r op %d attempts %d" % (r["index"], r["op"], r["attempts"]))
            if (r["error_type"], r["reason"], r["cause_type"], r["cause_reason"]) != (None,) * 4:
                probs.append("error %r %r %r %r" % (r["error_type"], r["reason"], r["cause_type"],
                                                    r["cause_reason"]))
            if probs:
                good_problems.append((op, r["id"], probs))
            if exp["id"] is None:
                gen_ids.append(r["id"])
            elif r["id"] != exp["id"]:
                given_mismatch.append((op, exp["id"], r["id"]))
    nbad = sum(1 for e in h.expected.values() if e["bad"])
    check(nbad >= 1 and not bad_problems,
          "%s: the server-refused document is FAILED, ESBULK_ERR_ITEM, status 400, "
          "mapper_parsing_exception, with a reason and its cause apart" % name,
          repr(bad_problems[:2]))
    if nbad and not bad_problems:
        r = [h.results[op][0] for op, e in h.expected.items() if e["bad"]][0]
        print("      (reason: %s)" % r["reason"])
    check(not good_problems,
          "%s: the other %d are INDEXED, status 201, result \"created\", %s" %
          (name, len(h.expected) - nbad,
           "_seq_no >= 0 (result.meta)" if h.meta else "_seq_no -1 (result.meta off)"), repr(good_problems[:3]))
    check(not given_mismatch, "%s: results carry the _id as added (UTF-8 included)" % name,
          repr(given_mismatch[:3]))
    badgen = [i for i in gen_ids if i is None or not ID_RE.match(i)]
    check(gen_ids and not badgen and len(set(gen_ids)) == len(gen_ids),
          "%s: %d documents added without an _id got distinct 20-char generated ids" %
          (name, len(gen_ids)), "bad %r, %d distinct" % (badgen[:3], len(set(gen_ids))))
    return indexed


def check_stats(h, indexed):
    p = lib.esbulk_stats_json(h.eb)
    if not check(bool(p), "%s: esbulk_stats_json" % h.name):
        return
    try:
        raw = ctypes.string_at(p)
    finally:
        lib.esbulk_free(p)
    try:
        st = json.loads(raw)
    except ValueError as e:
        check(False, "%s: esbulk_stats_json is JSON" % h.name, "%s: %r" % (e, raw[:200]))
        return
    nbad = sum(1 for e in h.expected.values() if e["bad"])
    check(st.get("indexed") == indexed,
          "%s: stats \"indexed\" is %d" % (h.name, indexed), "stats %s" % raw[:400])
    check(st.get("added") == len(h.expected) and st.get("failed") == nbad and
          st.get("pending") == 0,
          "%s: stats added %d, failed %d, pending 0" % (h.name, len(h.expected), nbad),
          "stats %s" % raw[:400])


def ids_in_index(h):
    return [(r[0]["id"], not h.expected[op]["bad"]) for op, r in h.results.items() if r]


# ---------------------------------------------------------------------------
# Handle C: the pull API, no callback at all

def pull_api(url):
    """10,000 documents added with esbulk_add_batch, drained with
    esbulk_poll_results in batches of 256 while adding goes on."""
    http("DELETE", "%s/%s" % (url, PULL_INDEX))
    st, body = http("PUT", "%s/%s" % (url, PULL_INDEX), {
        "settings": {"number_of_shards": 3, "number_of_replicas": 0},
        "mappings": {"properties": {"n": {"type": "integer"}}}})
    if not check(st == 200, "C: create index %s" % PULL_INDEX, "%d %r" % (st, body)):
        return
    http("GET", "%s/_cluster/health/%s?wait_for_status=green&timeout=60s" % (url, PULL_INDEX))
    errstr = ctypes.create_string_buffer(512)
    conf = lib.esbulk_conf_new()
    for k, v in (("urls", url), ("flush.docs", "500"), ("flush.interval.ms", "50"),
                 ("result.meta", "true")):
        lib.esbulk_conf_set(conf, k.encode(), v.encode(), errstr, len(errstr))
    lib.esbulk_conf_set_log_cb(conf, LOG_FN)
    eb = lib.esbulk_new(conf, errstr, len(errstr))  # neither result nor results callback
    lib.esbulk_conf_destroy(conf)
    if not check(bool(eb), "C: esbulk_new without result callbacks", dec(errstr.value)):
        return

    results = {}       # opaque -> list of result dicts
    unknown = []
    sizes = []
    problems = []
    out = (c_void_p * PULL_BATCH)()
    held_rc = [None]

    def pull(timeout_ms):
        n = lib.esbulk_poll_results(eb, out, PULL_BATCH, timeout_ms)
        if n < 0:
            problems.append("esbulk_poll_results returned %d" % n)
            return n
        if n > 0:
            sizes.append(n)
            # read every field of the whole batch first, then check it is
            # still intact after a refused second pull, then release
            batch = [read_result(out[i]) for i in range(n)]
            if held_rc[0] is None:
                held_rc[0] = lib.esbulk_poll_results(eb, out, PULL_BATCH, 0)
                again = [read_result(out[i]) for i in range(n)]
                if again != batch:
                    problems.append("a refused pull changed the held batch")
            for res in batch:
                op = res["opaque"]
                if op is not None and 1 <= op <= PULL_DOCS:
                    results.setdefault(op, []).append(res)
                else:
                    unknown.append(res)
            rc = lib.esbulk_results_release(eb)
            if rc != ESBULK_OK:
                problems.append("esbulk_results_release returned %d" % rc)
        return n

    t0 = time.monotonic()
    accepted = 0
    chunk = 1000
    for start in range(0, PULL_DOCS, chunk):
        docs = [(start + i + 1, "p-%d" % (start + i + 1),
                 json.dumps({"n": start + i + 1, "h": "C"}).encode()) for i in range(chunk)]
        rc, acc = add_batch_to(eb, PULL_INDEX, docs, errstr)
        accepted += acc
        if rc != ESBULK_OK:
            problems.append("esbulk_add_batch: %d %s" % (rc, dec(errstr.value)))
        pull(0)  # drain while adding goes on
    check(accepted == PULL_DOCS, "C: esbulk_add_batch accepted %d documents" % PULL_DOCS,
          "accepted %d" % accepted)
    end = time.monotonic() + 120
    while sum(len(v) for v in results.values()) + len(unknown) < accepted and \
            time.monotonic() < end:
        if pull(100) < 0:
            break
    dt = time.monotonic() - t0
    got = sum(len(v) for v in results.values())
    print("#   C: %d results in %d batches (largest %d) in %.1f s" %
          (got, len(sizes), max(sizes) if sizes else 0, dt))
    check(not problems, "C: the pull API calls succeeded", "; ".join(problems[:5]))
    check(held_rc[0] == ESBULK_ERR_RESULTS_HELD,
          "C: a second esbulk_poll_results before the release -> ESBULK_ERR_RESULTS_HELD",
          "rc %r" % held_rc[0])
    check(sizes and max(sizes) <= PULL_BATCH and len(sizes) >= PULL_DOCS // PULL_BATCH,
          "C: batches of at most %d results" % PULL_BATCH,
          "%d batches, largest %d" % (len(sizes), max(sizes) if sizes else 0))
    missing = [op for op in range(1, PULL_DOCS + 1) if op not in results]
    dup = {op: len(v) for op, v in results.items() if len(v) != 1}
    check(not missing and not dup and not unknown,
          "C: each of %d documents pulled exactly once, matched by opaque" % PULL_DOCS,
          "missing %d %r, duplicated %r, unknown %d" % (len(missing), missing[:5],
                                                      list(dup.items())[:5], len(unknown)))
    bad = [(op, r[0]) for op, r in results.items()
           if not (r[0]["outcome"] == ESBULK_OUTCOME_INDEXED and r[0]["err"] == ESBULK_OK and
                   r[0]["status"] == 201 and r[0]["result"] == "created" and
                   r[0]["id"] == "p-%d" % op and r[0]["index"] == PULL_INDEX and
                   r[0]["seq_no"] >= 0 and r[0]["version"] == 1)]
    check(not bad, "C: every pulled result reads as in a callback: INDEXED, 201, created, "
          "its _id, index and _seq_no", repr(bad[:3]))
    indexed = sum(1 for r in results.values() if r[0]["outcome"] == ESBULK_OUTCOME_INDEXED)
    check(lib.esbulk_pending(eb) == 0, "C: esbulk_pending is 0 after the releases",
          "%d" % lib.esbulk_pending(eb))
    rc = lib.esbulk_flush(eb, 10000)
    check(rc == ESBULK_OK, "C: esbulk_flush with nothing left returns ESBULK_OK", "rc %d" % rc)
    rc = lib.esbulk_close(eb, 10000)
    check(rc == ESBULK_OK, "C: esbulk_close returns ESBULK_OK", "rc %d" % rc)
    t1 = time.monotonic()
    n = lib.esbulk_poll_results(eb, out, PULL_BATCH, -1)
    check(n == 0 and time.monotonic() - t1 < 1.0,
          "C: after close, esbulk_poll_results(-1) returns 0 at once", "n %d" % n)
    lib.esbulk_destroy(eb)
    http("POST", "%s/%s/_refresh" % (url, PULL_INDEX))
    st, body = http("GET", "%s/%s/_count" % (url, PULL_INDEX))
    check(st == 200 and body.get("count") == indexed and indexed == PULL_DOCS,
          "C: _count of %s is %d, the number of INDEXED pulled results" % (PULL_INDEX, indexed),
          "%d %r" % (st, body))


def add_batch_to(eb, index, docs, errstr):
    """esbulk_add_batch of docs [(opaque, id, body bytes)] into index."""
    n = len(docs)
    ops = (c_int32 * n)(*([ESBULK_OP_INDEX] * n))
    indices = (c_char_p * n)(*([index.encode()] * n))
    ids = (c_char_p * n)(*[d[1].encode() for d in docs])
    id_lens = (c_size_t * n)(*[len(d[1]) for d in docs])
    bodies = (c_char_p * n)(*[d[2] for d in docs])
    body_lens = (c_size_t * n)(*[len(d[2]) for d in docs])
    opaques = (c_void_p * n)(*[d[0] for d in docs])
    accepted = c_size_t(0)
    rc = lib.esbulk_add_batch(eb, n, ops, indices, ids, id_lens, None, None, bodies, body_lens,
                              opaques, byref(accepted), errstr, len(errstr))
    return rc, accepted.value


def main():
    global lib
    if len(sys.argv) != 3:
        print("usage: ffi_smoke.py LIBESBULK_SO URL", file=sys.stderr)
        return 2
    so, url = sys.argv[1], sys.argv[2].rstrip("/")
    timer = threading.Timer(WATCHDOG_S, watchdog)
    timer.daemon = True
    timer.start()

    lib = load(so)
    print("# libesbulk %s (0x%08x) from %s" % (dec(lib.esbulk_version_str()),
                                             lib.esbulk_version(), so))

    # The index: "n" an integer, 3 shards, no replicas.
    http("DELETE", "%s/%s" % (url, INDEX))
    st, body = http("PUT", "%s/%s" % (url, INDEX), {
        "settings": {"number_of_shards": 3, "number_of_replicas": 0},
        "mappings": {"properties": {"n": {"type": "integer"}}}})
    if not check(st == 200, "create index %s (3 shards, 0 replicas, n: integer)" % INDEX,
                 "%d %r" % (st, body)):
        return finish()
    st, body = http("GET", "%s/_cluster/health/%s?wait_for_status=green&timeout=60s" %
                    (url, INDEX))
    check(st == 200 and body.get("status") == "green", "index %s is green" % INDEX, repr(body))

    threads_before = native_threads()
    a = Handle("A", 0xA)
    b = Handle("B", 0xB)
    handles[a.tag] = a
    handles[b.tag] = b
    if not (make_handle(a, url, batch=False) and make_handle(b, url, batch=True)):
        return finish()

    add_a(a)
    add_b(b)
    check(lib.esbulk_pending(a.eb) == len(a.expected) - a.served(),
          "A: esbulk_pending counts the unserved documents",
          "%d vs %d" % (lib.esbulk_pending(a.eb), len(a.expected) - a.served()))

    # No callback may run before anyone polls (both handles are busy sending now).
    time.sleep(0.5)
    check(a.cb_calls == 0 and b.cb_calls == 0, "no callback ran before poll/flush was called",
          "A %d, B %d calls" % (a.cb_calls, b.cb_calls))

    # A polls on the main thread; B polls on a second Python thread at the same time.
    b_done = []
    tb = threading.Thread(target=lambda: b_done.append(drive(b, len(b.expected) + 1, 60)),
                          name="poller-B")
    tb.start()
    ok_a = drive(a, len(a.expected) + 1, 60)  # +1: the re-queued document
    tb.join()
    check(ok_a and b_done == [True],
          "esbulk_poll served every result (A on the main thread, B on a second thread)",
          "A %d/%d, B %d/%d" % (a.served(), len(a.expected), b.served(), len(b.expected)))
    check(b.cb_calls < b.cb_results,
          "B: the batch callback got several results per call",
          "%d calls for %d results" % (b.cb_calls, b.cb_results))

    # flush: nothing left, returns at once; pending is 0
    for h in (a, b):
        flush(h, "after polling")
        check(lib.esbulk_pending(h.eb) == 0, "%s: esbulk_pending is 0 after flush" % h.name,
              "%d" % lib.esbulk_pending(h.eb))

    # One more document each after the poll, then flush alone delivers it.
    for h, op, given in ((a, 9100, "a-after-flush"), (b, 9200, "b-after-flush")):
        errstr = ctypes.create_string_buffer(256)
        body = json.dumps({"n": op}).encode()
        h.expected[op] = {"id": given, "bad": False}
        rc = lib.esbulk_add(h.eb, ESBULK_OP_INDEX, INDEX.encode(), given.encode(), len(given),
                            None, 0, body, len(body), op, errstr, len(errstr))
        check(rc == ESBULK_OK, "%s: esbulk_add after polling" % h.name, dec(errstr.value))
        before = h.served()
        flush(h, "of one document")
        check(h.served() == before + 1 and op in h.results,
              "%s: esbulk_flush served that document's result" % h.name,
              "served %d -> %d" % (before, h.served()))

    indexed = {}
    for h in (a, b):
        indexed[h.name] = check_results(h)
        check_stats(h, indexed[h.name])

    late = 0
    for h in (a, b):
        h.poller = threading.get_ident()
        before = h.served()
        rc = lib.esbulk_close(h.eb, 10000)
        check(rc == ESBULK_OK and h.served() == before,
              "%s: esbulk_close returns ESBULK_OK with nothing left to serve" % h.name,
              "rc %d, %d results during close" % (rc, h.served() - before))
        errstr = ctypes.create_string_buffer(256)
        rc = lib.esbulk_add(h.eb, ESBULK_OP_INDEX, INDEX.encode(), b"x", 1, None, 0, b'{"n":1}',
                            7, 99999, errstr, len(errstr))
        check(rc == -16, "%s: esbulk_add after close -> ESBULK_ERR_CLOSED" % h.name,
              "rc %d" % rc)
        served = h.served()
        lib.esbulk_destroy(h.eb)
        h.eb = None
        late += h.served() - served
    threads_after = native_threads()
    check(late == 0 and threads_after <= threads_before,
          "esbulk_destroy of both handles: no callback ran in it, and the library's threads "
          "are gone", "%d results during destroy; %d threads before the handles, %d after" %
          (late, threads_before, threads_after))

    # The index holds exactly the indexed documents.
    http("POST", "%s/%s/_refresh" % (url, INDEX))
    total = indexed["A"] + indexed["B"]
    st, body = http("GET", "%s/%s/_count" % (url, INDEX))
    check(st == 200 and body.get("count") == total,
          "_count is %d, the number of INDEXED results" % total, "%d %r" % (st, body))
    want = ids_in_index(a) + ids_in_index(b)
    st, body = http("POST", "%s/%s/_mget" % (url, INDEX),
                    {"docs": [{"_id": i, "_source": False} for i, _ in want]})
    found = {d["_id"]: d.get("found") for d in body.get("docs", [])} if st == 200 else {}
    wrong = [(i, should) for i, should in want if found.get(i) != should]
    check(st == 200 and not wrong,
          "_mget: every INDEXED id is in the index, the FAILED ones are not",
          "%d, wrong %r" % (st, wrong[:5]))

    pull_api(url)
    return finish()


def finish():
    if failed:
        with log_lock:
            tail = log_lines[-30:]
        for line in tail:
            print("# log: %s" % line)
    print("%d passed, %d failed" % (passed, failed))
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
