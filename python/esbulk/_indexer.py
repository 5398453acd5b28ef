"""esbulk.Indexer: the producer object over libesbulk's pull API."""
import collections
import ctypes
import itertools
import json
import re
import threading
import time
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p
from typing import (Any, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence,
                    Tuple, Union)

from . import _clib
from ._clib import lib
from .errors import ConfigError, EsbulkError, InvalidDocumentError, QueueFullError

try:
    import orjson as _orjson  # type: ignore

    def _dumps(obj: Any) -> bytes:
        return _orjson.dumps(obj)  # type: ignore[no-any-return]
    JSON_ENCODER = "orjson"
except ImportError:  # pragma: no cover - depends on what is installed
    _json_enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)

    def _dumps(obj: Any) -> bytes:
        return _json_enc.encode(obj).encode("utf-8")
    JSON_ENCODER = "json"

Body = Union[Mapping[str, Any], str, bytes, bytearray, memoryview, None]
ResultCallback = Callable[["Result"], Any]

# Every key of esbulk-config(7); a Python-style keyword (flush_docs) is the key
# with its dots as underscores.
CONF_KEYS = (
    "urls", "connect.timeout.ms", "request.timeout.ms", "response.max.bytes",
    "auth.username", "auth.password", "auth.api_key", "auth.bearer",
    "tls.ca.file", "tls.ca.path", "tls.cert.file", "tls.key.file", "tls.key.password",
    "tls.insecure", "topology.discovery", "topology.refresh.interval.ms", "topology.wait.ms",
    "topology.idle.ms", "node.recheck.ms", "log.level", "routing.level", "flush.docs",
    "flush.bytes", "flush.interval.ms", "max.inflight.per.node", "buffer.max.bytes",
    "buffer.max.docs", "enqueue.timeout.ms", "max.doc.bytes", "id.generate", "body.validate",
    "compression", "compression.level", "retry.max", "retry.backoff.ms",
    "retry.backoff.max.ms", "retry.on.cluster_block", "delivery.timeout.ms", "ordering",
    "result.failures_only", "result.keep_body", "stats.interval.ms", "bulk.pipeline",
    "bulk.refresh",
)
_PY_KEYS = {k.replace(".", "_"): k for k in CONF_KEYS}

SLICE_S = 0.2      # the longest single wait inside the library: Ctrl-C stays prompt
POLL_BATCH = 1024  # results pulled per esbulk_poll_results call

_OUTCOMES = ("indexed", "failed", "possibly")


def conf_key(name: str) -> str:
    """The libesbulk key for a keyword: "flush.docs" as is, flush_docs -> flush.docs."""
    if "." in name:
        return name
    return _PY_KEYS.get(name, name.replace("_", "."))


def conf_value(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def hosts_to_urls(hosts: Any) -> Optional[str]:
    """A URL, a list of URLs, or opensearch-py style host dicts -> "urls"."""
    if hosts is None:
        return None
    if isinstance(hosts, (str, bytes)):
        hosts = [hosts]
    out = []
    for h in hosts:
        if isinstance(h, bytes):
            h = h.decode()
        if isinstance(h, Mapping):
            scheme = h.get("scheme") or ("https" if h.get("use_ssl") else "http")
            url = "%s://%s:%s%s" % (scheme, h.get("host", "127.0.0.1"), h.get("port", 9200),
                                    h.get("url_prefix", ""))
            out.append(url)
        else:
            out.append(str(h))
    return ",".join(out)


def encode_body(body: Body) -> Optional[bytes]:
    """dict -> JSON (orjson when installed, else json); str -> UTF-8; bytes as is."""
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    return _dumps(body)


class Result:
    """One document's result, handed to its on_result callback.

    ok: indexed; outcome: "indexed", "failed" or "possibly" (the request broke
    after it was sent: the document may or may not be indexed); error: the
    esbulk_err_t code (0 when indexed), error_name its description; status:
    the item's HTTP status (0 if none); error_type / reason: the server's (or
    the library's) explanation; op, index, id, result ("created", "updated",
    ...), seq_no, primary_term, version (-1 when absent), attempts; body: the
    document as sent, only with result.keep_body and only when not indexed;
    context: the object given to add().
    """
    __slots__ = ("outcome_code", "error", "op", "index", "id", "status", "error_type",
                 "reason", "result", "seq_no", "primary_term", "version", "attempts", "body",
                 "context", "_cb")
    outcome_code: int
    error: int
    op: str
    index: Optional[str]
    id: Optional[str]
    status: int
    error_type: Optional[str]
    reason: Optional[str]
    result: Optional[str]
    seq_no: int
    primary_term: int
    version: int
    attempts: int
    body: Optional[bytes]
    context: Any
    _cb: Optional[ResultCallback]

    @property
    def ok(self) -> bool:
        return self.outcome_code == _clib.OUTCOME_INDEXED

    @property
    def outcome(self) -> str:
        return _OUTCOMES[self.outcome_code] if 0 <= self.outcome_code < 3 else "unknown"

    @property
    def error_name(self) -> str:
        return _clib.err2str(self.error)

    def item(self) -> Dict[str, Any]:
        """The result as the item of a _bulk answer (what opensearch-py's helpers yield)."""
        it: Dict[str, Any] = {"_index": self.index, "_id": self.id}
        if self.ok:
            if self.version >= 0:
                it["_version"] = self.version
            if self.result is not None:
                it["result"] = self.result
            if self.seq_no >= 0:
                it["_seq_no"] = self.seq_no
                it["_primary_term"] = self.primary_term
            it["status"] = self.status
            return it
        it["status"] = self.status if self.status else 500
        if self.error == _clib.ERR_ITEM:
            it["error"] = _server_error(self.error_type, self.reason)
        else:
            it["error"] = {"type": self.error_type or "esbulk_error",
                           "reason": self.reason or self.error_name,
                           "esbulk_error": self.error_name}
        return it

    def __repr__(self) -> str:
        return "<esbulk.Result %s %s %s/%s status=%d%s>" % (
            self.outcome, self.op, self.index, self.id, self.status,
            "" if self.ok else " %s: %s" % (self.error_type, self.reason))


_CAUSED_BY = re.compile(r"^(.*) \(caused by ([A-Za-z0-9_.]+): (.*)\)$", re.S)


def _server_error(etype: Optional[str], reason: Optional[str]) -> Dict[str, Any]:
    """The server's error object again: libesbulk appends the root cause to
    the reason as " (caused by TYPE: REASON)"."""
    e: Dict[str, Any] = {"type": etype, "reason": reason}
    m = _CAUSED_BY.match(reason or "")
    if m:
        e["reason"] = m.group(1)
        e["caused_by"] = {"type": m.group(2), "reason": m.group(3)}
    return e


def _read_results(out: Any, n: int, tokens: Dict[int, Tuple[Any, Any]],
                  default_cb: Optional[ResultCallback], keep_body: bool) -> List[Result]:
    L = lib
    res = []
    blen = c_size_t(0)
    for i in range(n):
        p = out[i]
        r = Result()
        r.outcome_code = oc = L.esbulk_result_outcome(p)
        r.error = L.esbulk_result_err(p)
        r.op = _clib.OP_NAMES[L.esbulk_result_op(p)]
        s = L.esbulk_result_index(p)
        r.index = s.decode() if s is not None else None
        s = L.esbulk_result_id(p)
        r.id = s.decode() if s is not None else None
        r.status = L.esbulk_result_status(p)
        if oc == _clib.OUTCOME_INDEXED:
            r.error_type = r.reason = r.body = None
        else:
            r.error_type = _clib.dec(L.esbulk_result_error_type(p))
            r.reason = _clib.dec(L.esbulk_result_error_reason(p))
            r.body = None
            if keep_body:
                bp = L.esbulk_result_body(p, byref(blen))
                if bp:
                    r.body = ctypes.string_at(bp, blen.value)
        s = L.esbulk_result_result(p)
        r.result = s.decode() if s is not None else None
        r.seq_no = L.esbulk_result_seq_no(p)
        r.primary_term = L.esbulk_result_primary_term(p)
        r.version = L.esbulk_result_version(p)
        r.attempts = L.esbulk_result_attempts(p)
        tok = L.esbulk_result_opaque(p)
        if tok:
            r._cb, r.context = tokens.pop(tok)
            if r._cb is None:
                r._cb = default_cb
        else:
            r._cb, r.context = default_cb, None
        res.append(r)
    return res


class Indexer:
    """A bulk indexer over libesbulk, in the manner of confluent-kafka's Producer.

    ``Indexer(hosts, **conf)``: hosts is a URL, a list of URLs (or
    opensearch-py style host dicts); conf takes every key of esbulk-config(7),
    as ``**{"flush.docs": 1000}`` or as ``flush_docs=1000``; True/False become
    "true"/"false". Besides:

    - ``on_result``: the default callback, ``f(result)``, for documents added
      without one of their own (None: results are counted, not reported);
    - ``block``: when the buffer is full (buffer.max.docs / buffer.max.bytes),
      add() serves results and waits for room instead of raising BufferError.
      Blocking serves callbacks from add(), so use it from the polling thread.

    Results reach the callbacks only inside poll(), flush() and close(), on
    the thread that called them: they are pulled from the library in batches
    (esbulk_poll_results), never called back from C. An exception raised by a
    callback stops that call and propagates out of it; the results not yet
    handed out stay queued for the next call. add() may be called from any
    number of threads; poll/flush/close from one at a time.
    """

    def __init__(self, hosts: Any = None, *, on_result: Optional[ResultCallback] = None,
                 block: bool = False, **conf: Any) -> None:
        self._eb: Optional[int] = None
        self._on_result = on_result
        self._block = block
        self._tokens: Dict[int, Tuple[Any, Any]] = {}
        self._next_token = itertools.count(1).__next__
        self._ready: Deque[Result] = collections.deque()
        self._out = (c_void_p * POLL_BATCH)()
        self._lock = threading.RLock()   # one poller at a time
        self._index_cache: Dict[str, bytes] = {}
        self._errstr = ctypes.create_string_buffer(1024)
        settings: List[Tuple[str, str]] = []
        urls = hosts_to_urls(hosts)
        if urls is not None:
            settings.append(("urls", urls))
        for name, value in conf.items():
            if value is not None:
                settings.append((conf_key(name), conf_value(value)))
        self._keep_body = any(k == "result.keep_body" and v == "true" for k, v in settings)
        c = lib.esbulk_conf_new()
        if not c:
            raise MemoryError("esbulk_conf_new")
        try:
            err = ctypes.create_string_buffer(512)
            for k, v in settings:
                rc = lib.esbulk_conf_set(c, k.encode(), v.encode(), err, len(err))
                if rc != _clib.OK:
                    raise ConfigError("%s: %s" % (k, _clib.dec(err.value) or _clib.err2str(rc)),
                                      rc)
            eb = lib.esbulk_new(c, err, len(err))
            if not eb:
                raise EsbulkError("esbulk_new: %s" % _clib.dec(err.value))
            self._eb = eb
        finally:
            lib.esbulk_conf_destroy(c)

    # -- adding -----------------------------------------------------------

    def _index_bytes(self, index: str) -> bytes:
        b = self._index_cache.get(index)
        if b is None:
            if not isinstance(index, str) or not index:
                raise InvalidDocumentError("index must be a non-empty str, not %r" % (index,),
                                           _clib.ERR_INVALID_ARG)
            b = index.encode("utf-8")
            if len(self._index_cache) < 10000:
                self._index_cache[index] = b
        return b

    def _handle(self) -> int:
        if self._eb is None:
            raise EsbulkError("the Indexer is closed", _clib.ERR_CLOSED)
        return self._eb

    @staticmethod
    def _make_opts(version: Optional[int], version_type: Optional[str],
                   if_seq_no: Optional[int], if_primary_term: Optional[int],
                   pipeline: Optional[str], require_alias: Optional[bool],
                   retry_on_conflict: Optional[int]) -> Optional[int]:
        if (version is None and if_seq_no is None and if_primary_term is None and
                pipeline is None and require_alias is None and retry_on_conflict is None):
            if version_type is not None:
                raise InvalidDocumentError("version_type without version", _clib.ERR_INVALID_ARG)
            return None
        o = lib.esbulk_docopts_new()
        if not o:
            raise MemoryError("esbulk_docopts_new")
        try:
            rc = _clib.OK
            what = ""
            if version is not None:
                vt = _clib.VERSION_TYPES.get(version_type or "external")
                if vt is None:
                    raise InvalidDocumentError("version_type must be external or external_gte, "
                                               "not %r" % (version_type,), _clib.ERR_INVALID_ARG)
                rc, what = lib.esbulk_docopts_set_version(o, int(version), vt), "version"
            if rc == _clib.OK and (if_seq_no is not None or if_primary_term is not None):
                if if_seq_no is None or if_primary_term is None:
                    raise InvalidDocumentError("if_seq_no and if_primary_term go together",
                                               _clib.ERR_INVALID_ARG)
                rc, what = lib.esbulk_docopts_set_if_seq_no(o, int(if_seq_no),
                                                            int(if_primary_term)), "if_seq_no"
            if rc == _clib.OK and pipeline is not None:
                rc, what = lib.esbulk_docopts_set_pipeline(o, pipeline.encode()), "pipeline"
            if rc == _clib.OK and require_alias is not None:
                rc, what = (lib.esbulk_docopts_set_require_alias(o, 1 if require_alias else 0),
                            "require_alias")
            if rc == _clib.OK and retry_on_conflict is not None:
                rc, what = (lib.esbulk_docopts_set_retry_on_conflict(o, int(retry_on_conflict)),
                            "retry_on_conflict")
            if rc != _clib.OK:
                raise InvalidDocumentError("%s: %s" % (what, _clib.err2str(rc)), rc)
        except BaseException:
            lib.esbulk_docopts_destroy(o)
            raise
        return o  # type: ignore[no-any-return]

    def _token(self, on_result: Optional[ResultCallback], context: Any) -> Optional[int]:
        if on_result is None and context is None:
            return None
        t = self._next_token()
        self._tokens[t] = (on_result, context)
        return t

    def add(self, index: Union[str, Mapping[str, Any]], body: Body = None, *,
            id: Optional[str] = None, routing: Optional[str] = None, op: str = "index",
            version: Optional[int] = None, version_type: Optional[str] = None,
            if_seq_no: Optional[int] = None, if_primary_term: Optional[int] = None,
            pipeline: Optional[str] = None, require_alias: Optional[bool] = None,
            retry_on_conflict: Optional[int] = None,
            on_result: Optional[ResultCallback] = None, context: Any = None) -> None:
        """Adds one document: ``add("logs", {"msg": "hi"}, id="1")``, or an
        action dict of the bulk helpers (``add({"_index": "logs", "_id": "1",
        "msg": "hi"})``). body: a dict (encoded to JSON), or str/bytes sent as
        they are; None for a delete. op: index, create, update (body is the
        update request, {"doc": ...}) or delete. The options are the bulk
        action's (version with version_type "external" or "external_gte",
        if_seq_no with if_primary_term, pipeline, require_alias,
        retry_on_conflict for updates). on_result(result) is called once for
        this document from poll/flush/close (else the Indexer's default);
        context comes back as result.context.

        Raises BufferError (QueueFullError) when the buffer is full and the
        Indexer does not block, InvalidDocumentError (a ValueError) for a
        document refused at once; a refused document gets no result."""
        if isinstance(index, Mapping):
            self.add_actions((index,), on_result=on_result, context=context)
            return
        eb = self._handle()
        opc = _clib.OPS.get(op)
        if opc is None:
            raise InvalidDocumentError("op must be index, create, update or delete, not %r"
                                       % (op,), _clib.ERR_INVALID_ARG)
        ib = self._index_bytes(index)
        idb = None if id is None else str(id).encode("utf-8")
        rb = None if routing is None else str(routing).encode("utf-8")
        bb = encode_body(body)
        opts = self._make_opts(version, version_type, if_seq_no, if_primary_term, pipeline,
                               require_alias, retry_on_conflict)
        tok = self._token(on_result, context)
        err = ctypes.create_string_buffer(256)
        try:
            while True:
                rc = lib.esbulk_add_opts(eb, opc, ib, idb, len(idb) if idb else 0, rb,
                                         len(rb) if rb else 0, bb, len(bb) if bb else 0, opts,
                                         tok, err, len(err))
                if rc == _clib.ERR_QUEUE_FULL and self._block:
                    self._wait_for_room()
                    continue
                break
        finally:
            if opts:
                lib.esbulk_docopts_destroy(opts)
        if rc != _clib.OK:
            if tok is not None:
                self._tokens.pop(tok, None)
            self._raise_add(rc, _clib.dec(err.value), 0)

    def _raise_add(self, rc: int, msg: Optional[str], accepted: int) -> None:
        text = msg or _clib.err2str(rc)
        if rc == _clib.ERR_QUEUE_FULL:
            raise QueueFullError("esbulk: queue full: %s (poll() or flush() to make room)"
                                 % text, rc, accepted)
        if rc == _clib.ERR_CLOSED:
            raise EsbulkError("esbulk: the Indexer is closed", rc, accepted)
        if rc == -2:
            raise MemoryError(text)
        raise InvalidDocumentError("esbulk: document %d refused: %s" % (accepted, text), rc,
                                   accepted)

    def _wait_for_room(self) -> None:
        # A full buffer will not drain by waiting for flush.interval.ms: send
        # now and serve what comes back (flush returns once all are served).
        self.flush(SLICE_S / 2)

    def add_many(self, index: str, bodies: Iterable[Body], *,
                 ids: Optional[Sequence[Optional[str]]] = None,
                 routings: Optional[Sequence[Optional[str]]] = None, op: str = "index",
                 on_result: Optional[ResultCallback] = None,
                 contexts: Optional[Sequence[Any]] = None) -> int:
        """Adds a chunk of documents to one index through ONE library call
        (esbulk_add_batch_opts): bodies (dicts, str or bytes), with ids,
        routings and contexts aligned with them when given, and one op and
        on_result for all. Returns how many were added (all of them, or an
        exception is raised whose ``accepted`` says how many were)."""
        bl = [encode_body(b) for b in bodies]
        n = len(bl)
        if n == 0:
            return 0
        opc = _clib.OPS.get(op)
        if opc is None:
            raise InvalidDocumentError("unknown op %r" % (op,), _clib.ERR_INVALID_ARG)
        ib = self._index_bytes(index)
        idl = None if ids is None else [None if i is None else str(i).encode() for i in ids]
        rtl = None if routings is None else [None if r is None else str(r).encode()
                                            for r in routings]
        if contexts is None and on_result is None:
            toks = None
        else:
            toks = [self._token(on_result, None if contexts is None else contexts[k])
                    for k in range(n)]
        return self._add_batch([opc] * n, [ib] * n, idl, rtl, bl, None, toks)

    def add_actions(self, actions: Iterable[Union[Mapping[str, Any], str]], *,
                    on_result: Optional[ResultCallback] = None,
                    context: Any = None, contexts: Optional[Sequence[Any]] = None) -> int:
        """Adds the action dicts of opensearch-py's bulk helpers (_op_type,
        _index, _id, _routing, _source or the other keys as the body,
        _if_seq_no, _if_primary_term, _version, _version_type,
        retry_on_conflict, pipeline) through one library call. Returns how
        many were added (see add_many)."""
        prepared = []
        for a in actions:
            opc, index, id_, routing, body, o = parse_action(a)
            prepared.append((opc, index, id_, routing, encode_body(body), o))
        if contexts is None:
            contexts = [context] * len(prepared)
        return self._add_prepared(prepared, contexts, on_result)

    def _add_prepared(self, prepared: Sequence[Tuple[int, str, Any, Any, Optional[bytes],
                                                     Dict[str, Any]]],
                      contexts: Optional[Sequence[Any]] = None,
                      on_result: Optional[ResultCallback] = None) -> int:
        """Adds (op code, index, id, routing, encoded body, options) tuples
        through one esbulk_add_batch_opts call; contexts aligned with them."""
        ops: List[int] = []
        idx: List[bytes] = []
        idl: List[Optional[bytes]] = []
        rtl: List[Optional[bytes]] = []
        bl: List[Optional[bytes]] = []
        optl: List[Optional[int]] = []
        toks: List[Optional[int]] = []
        submitted = False
        try:
            for k, (opc, index, id_, routing, body, o) in enumerate(prepared):
                ops.append(opc)
                idx.append(self._index_bytes(index))
                idl.append(None if id_ is None else str(id_).encode("utf-8"))
                rtl.append(None if routing is None else str(routing).encode("utf-8"))
                bl.append(body)
                optl.append(self._make_opts(**o) if o else None)
            toks = [self._token(on_result, contexts[k] if contexts is not None else None)
                    for k in range(len(ops))]
            submitted = True
            return self._add_batch(ops, idx, idl, rtl, bl,
                                   optl if any(optl) else None,
                                   toks if any(t is not None for t in toks) else None)
        except BaseException:
            if not submitted:  # _add_batch forgets the tokens it did not add itself
                for t in toks:
                    if t is not None:
                        self._tokens.pop(t, None)
            raise
        finally:
            for o2 in optl:
                if o2:
                    lib.esbulk_docopts_destroy(o2)

    def _add_batch(self, ops: List[int], indices: List[bytes], ids: Optional[List[Any]],
                   routings: Optional[List[Any]], bodies: List[Optional[bytes]],
                   opts: Optional[List[Optional[int]]], toks: Optional[List[Optional[int]]]
                   ) -> int:
        eb = self._handle()
        n = len(ops)
        if not any(r is not None for r in routings or ()):
            routings = None
        if ids is not None and not any(i is not None for i in ids):
            ids = None
        start = 0
        err = ctypes.create_string_buffer(512)
        accepted = c_size_t(0)
        while True:
            m = n - start
            sl = slice(start, n)
            a_ops = (c_int32 * m)(*ops[sl])
            a_idx = (c_char_p * m)(*indices[sl])
            a_ids = a_idl = a_rt = a_rtl = a_opts = a_tok = None
            if ids is not None:
                a_ids = (c_char_p * m)(*ids[sl])
                a_idl = (c_size_t * m)(*[len(i) if i else 0 for i in ids[sl]])
            if routings is not None:
                a_rt = (c_char_p * m)(*routings[sl])
                a_rtl = (c_size_t * m)(*[len(r) if r else 0 for r in routings[sl]])
            a_b = (c_char_p * m)(*bodies[sl])
            a_bl = (c_size_t * m)(*[len(b) if b else 0 for b in bodies[sl]])
            if opts is not None:
                a_opts = (c_void_p * m)(*opts[sl])
            if toks is not None:
                a_tok = (c_void_p * m)(*toks[sl])
            rc = lib.esbulk_add_batch_opts(eb, m, a_ops, a_idx, a_ids, a_idl, a_rt, a_rtl, a_b,
                                           a_bl, a_opts, a_tok, byref(accepted), err, len(err))
            start += accepted.value
            if rc == _clib.OK:
                return n
            if rc == _clib.ERR_QUEUE_FULL and self._block:
                self._wait_for_room()
                continue
            if toks is not None:
                for t in toks[start:]:
                    if t is not None:
                        self._tokens.pop(t, None)
            self._raise_add(rc, _clib.dec(err.value), start)

    # -- results ----------------------------------------------------------

    def _pull(self, timeout_ms: int) -> int:
        """Pulls one batch into self._ready and releases it at once."""
        eb = self._handle()
        n = lib.esbulk_poll_results(eb, self._out, POLL_BATCH, timeout_ms)
        if n < 0:
            raise EsbulkError("esbulk_poll_results: %s" % _clib.err2str(n), n)
        if n:
            try:
                self._ready.extend(_read_results(self._out, n, self._tokens, self._on_result,
                                                 self._keep_body))
            finally:
                lib.esbulk_results_release(eb)
        return int(n)

    def _dispatch(self) -> int:
        """Hands the pulled results to their callbacks; an exception from one
        propagates (that result counts as served, the rest stay queued)."""
        ready = self._ready
        served = 0
        while ready:
            r = ready.popleft()
            served += 1
            cb = r._cb
            r._cb = None
            if cb is not None:
                cb(r)
        return served

    def _drain(self) -> int:
        """Serves every result ready now, without waiting."""
        served = self._dispatch()
        while True:
            n = self._pull(0)
            served += self._dispatch()
            if n < POLL_BATCH:
                return served

    def poll(self, timeout: Optional[float] = 0) -> int:
        """Serves the results that are ready, waiting up to timeout seconds
        (0: not at all, None: until one comes) for the first. Returns how
        many results were served (callbacks run)."""
        with self._lock:
            served = self._drain()
            if served or timeout == 0:
                return served
            deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
            while True:
                if deadline is None:
                    ms = int(SLICE_S * 1000)
                else:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return 0
                    ms = max(1, int(min(left, SLICE_S) * 1000))
                if self._pull(ms):
                    return self._drain()

    def flush(self, timeout: Optional[float] = None) -> int:
        """Sends everything buffered now and serves results until every
        document has its result, or timeout seconds (None: no limit) pass.
        Returns the number of documents still pending (0: all served). Waits
        in slices of 0.2 s, so KeyboardInterrupt stops it; a later flush
        carries on."""
        with self._lock:
            eb = self._handle()
            deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
            while True:
                self._drain()
                left = len(self)
                if left == 0:
                    return 0
                if deadline is None:
                    ms = int(SLICE_S * 1000)
                else:
                    rem = deadline - time.monotonic()
                    if rem <= 0:
                        return left
                    ms = max(1, int(min(rem, SLICE_S) * 1000))
                rc = lib.esbulk_flush(eb, ms)
                if rc not in (_clib.OK, _clib.ERR_TIMED_OUT):
                    raise EsbulkError("esbulk_flush: %s" % _clib.err2str(rc), rc)

    def close(self, timeout: Optional[float] = None) -> int:
        """Flushes for up to timeout seconds (None: no limit), then closes:
        every document still without a result gets one (failed, "not
        delivered: closed"; possibly, if its request was in flight), and all
        are served. Returns how many documents the flush left undelivered.
        An exception from a callback is re-raised after every result has been
        served and the handle freed. Closing twice is a no-op."""
        with self._lock:
            if self._eb is None:
                return 0
            left = self.flush(timeout)
            lib.esbulk_close(self._eb, 0)
            first: Optional[BaseException] = None
            while True:
                try:
                    n = self._pull(0)
                    self._dispatch()
                except Exception as e:  # keep serving: every document gets its result
                    if first is None:
                        first = e
                    continue
                if n == 0 and not self._ready:
                    break
            eb, self._eb = self._eb, None
            lib.esbulk_destroy(eb)
            if first is not None:
                raise first
            return left

    def __len__(self) -> int:
        """Documents added whose result has not been served yet."""
        if self._eb is None:
            return len(self._ready)
        return int(lib.esbulk_pending(self._eb)) + len(self._ready)

    def stats(self) -> Dict[str, Any]:
        """libesbulk's statistics (esbulk_stats_json(3)) as a dict."""
        p = lib.esbulk_stats_json(self._handle())
        if not p:
            raise MemoryError("esbulk_stats_json")
        try:
            return json.loads(ctypes.string_at(p))  # type: ignore[no-any-return]
        finally:
            lib.esbulk_free(p)

    def __enter__(self) -> "Indexer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        eb = getattr(self, "_eb", None)
        if eb is not None:  # not closed: the remaining results are dropped unserved
            self._eb = None
            lib.esbulk_destroy(eb)


_META_KEYS = {"_op_type", "_index", "_id", "_routing", "routing", "_source", "_if_seq_no",
              "if_seq_no", "_if_primary_term", "if_primary_term", "_version", "version",
              "_version_type", "version_type", "retry_on_conflict", "_retry_on_conflict",
              "pipeline", "require_alias", "_require_alias", "_parent", "_type"}


def parse_action(a: Any) -> Tuple[int, str, Any, Any, Any, Dict[str, Any]]:
    """An action dict of the bulk helpers -> (op, index, id, routing, body, options)."""
    if isinstance(a, (str, bytes)):
        raise InvalidDocumentError("an action without _index (a bare string) cannot be added",
                                   _clib.ERR_INVALID_ARG)
    g = a.get
    op = g("_op_type", "index")
    opc = _clib.OPS.get(op)
    if opc is None:
        raise InvalidDocumentError("_op_type must be index, create, update or delete, not %r"
                                   % (op,), _clib.ERR_INVALID_ARG)
    index = g("_index")
    if index is None:
        raise InvalidDocumentError("action without _index: %r" % (a,), _clib.ERR_INVALID_ARG)
    routing = g("_routing", g("routing"))
    if opc == 3:
        body = None
    elif "_source" in a:
        body = a["_source"]
    else:
        body = {k: v for k, v in a.items() if k not in _META_KEYS}
    o: Dict[str, Any] = {}
    v = g("_version", g("version"))
    if v is not None:
        o["version"] = v
        o["version_type"] = g("_version_type", g("version_type"))
    s = g("_if_seq_no", g("if_seq_no"))
    if s is not None:
        o["if_seq_no"] = s
    t = g("_if_primary_term", g("if_primary_term"))
    if t is not None:
        o["if_primary_term"] = t
    if g("pipeline") is not None:
        o["pipeline"] = g("pipeline")
    ra = g("require_alias", g("_require_alias"))
    if ra is not None:
        o["require_alias"] = ra
    rc = g("retry_on_conflict", g("_retry_on_conflict"))
    if rc is not None:
        o["retry_on_conflict"] = rc
    if o:
        for k in ("version", "version_type", "if_seq_no", "if_primary_term", "pipeline",
                  "require_alias", "retry_on_conflict"):
            o.setdefault(k, None)
    return opc, index, g("_id"), routing, body, o
