"""esbulk.Result, and the reading of a pulled batch of results into them
(esbulk_poll_results' columns)."""
import ctypes
from ctypes import byref, c_int32, c_size_t, c_void_p
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import _clib
from ._clib import lib
from .errors import EsbulkError


ResultCallback = Callable[["Result"], Any]
# a result's error fields: (error_type, reason, body, cause_type, cause_reason)
_ErrorFields = Tuple[Optional[str], Optional[str], Optional[bytes], Optional[str], Optional[str]]
POLL_BATCH = 1024  # results pulled per esbulk_poll_results call

_OUTCOMES = ("indexed", "failed", "possibly")


class Result:
    """One document's result, handed to its on_result callback.

    ok: indexed; outcome: "indexed", "failed" or "possibly" (the request broke
    after it was sent: the document may or may not be indexed); error: the
    esbulk_err_t code (0 when indexed), error_name its description; status:
    the item's HTTP status (0 if none); error_type / reason: the server's (or
    the library's) explanation, the reason ending with " (caused by TYPE:
    REASON)" when the server's error has a caused_by, whose type and reason
    are also cause_type / cause_reason (else None); op, index, id, result ("created", "updated",
    ...), seq_no, primary_term, version (-1 unless result_meta=True asked
    the server for them; the helpers that yield items ask), attempts; body: the
    document as sent, only with result.keep_body and only when not indexed;
    context: the object given to add().

    The fields are read from the library a batch at a time and kept in one
    tuple (a result costs one object, not one attribute per field); they are
    read-only.
    """
    __slots__ = ("_f", "_e", "context", "_cb")
    # _f: (outcome, err, op, status, attempts, flags, seq_no, primary_term,
    #      version, index, id, result); _e: (error_type, reason, body,
    #      cause_type, cause_reason) or None
    _f: Tuple[Any, ...]
    _e: Optional[_ErrorFields]
    context: Any
    _cb: Optional[ResultCallback]

    @property
    def outcome_code(self) -> int:
        return self._f[0]  # type: ignore[no-any-return]

    @property
    def error(self) -> int:
        return self._f[1]  # type: ignore[no-any-return]

    @property
    def op(self) -> str:
        return _clib.OP_NAMES[self._f[2]]

    @property
    def status(self) -> int:
        return self._f[3]  # type: ignore[no-any-return]

    @property
    def attempts(self) -> int:
        return self._f[4]  # type: ignore[no-any-return]

    @property
    def seq_no(self) -> int:
        return self._f[6]  # type: ignore[no-any-return]

    @property
    def primary_term(self) -> int:
        return self._f[7]  # type: ignore[no-any-return]

    @property
    def version(self) -> int:
        return self._f[8]  # type: ignore[no-any-return]

    @property
    def index(self) -> Optional[str]:
        return self._f[9]  # type: ignore[no-any-return]

    @property
    def id(self) -> Optional[str]:
        return self._f[10]  # type: ignore[no-any-return]

    @property
    def result(self) -> Optional[str]:
        return self._f[11]  # type: ignore[no-any-return]

    @property
    def error_type(self) -> Optional[str]:
        return None if self._e is None else self._e[0]

    @property
    def reason(self) -> Optional[str]:
        return None if self._e is None else self._e[1]

    @property
    def body(self) -> Optional[bytes]:
        return None if self._e is None else self._e[2]

    @property
    def cause_type(self) -> Optional[str]:
        return None if self._e is None else self._e[3]

    @property
    def cause_reason(self) -> Optional[str]:
        return None if self._e is None else self._e[4]

    @property
    def ok(self) -> bool:
        return self._f[0] == _clib.OUTCOME_INDEXED  # type: ignore[no-any-return]

    @property
    def outcome(self) -> str:
        oc = self._f[0]
        return _OUTCOMES[oc] if 0 <= oc < 3 else "unknown"

    @property
    def error_name(self) -> str:
        return _clib.err2str(self._f[1])

    def item(self) -> Dict[str, Any]:
        """The result as the item of a _bulk answer (what opensearch-py's helpers yield)."""
        f = self._f
        it: Dict[str, Any] = {"_index": f[9], "_id": f[10]}
        # what the server sent, with a refusal too (libesbulk does not keep
        # the item's _shards)
        if f[8] >= 0:
            it["_version"] = f[8]
        if f[11] is not None:
            it["result"] = f[11]
        if f[6] >= 0:
            it["_seq_no"] = f[6]
            it["_primary_term"] = f[7]
        if f[0] == _clib.OUTCOME_INDEXED:
            it["status"] = f[3]
            return it
        it["status"] = f[3] if f[3] else 500
        if f[1] == _clib.ERR_ITEM:
            it["error"] = _server_error(self._e)
        else:
            it["error"] = {"type": self.error_type or "esbulk_error",
                           "reason": self.reason or self.error_name,
                           "esbulk_error": self.error_name}
        return it

    def __repr__(self) -> str:
        return "<esbulk.Result %s %s %s/%s status=%d%s>" % (
            self.outcome, self.op, self.index, self.id, self.status,
            "" if self.ok else " %s: %s" % (self.error_type, self.reason))


_new_result = object.__new__


def _make_result(f: Tuple[Any, ...], e: Any, cb: Optional[ResultCallback],
                 context: Any) -> Result:
    r = _new_result(Result)
    r._f, r._e, r._cb, r.context = f, e, cb, context
    return r


def _server_error(f: Optional[_ErrorFields]) -> Dict[str, Any]:
    """The server's error object again: its caused_by apart, and off the end
    of the reason, where libesbulk appends it as " (caused by TYPE: REASON)"
    (TYPE "error" when it has none; esbulk_result_error_reason(3))."""
    etype, reason, _, ctype, creason = f if f is not None else (None, None, None, None, None)
    e: Dict[str, Any] = {"type": etype, "reason": reason}
    if creason is not None:
        tail = " (caused by %s: %s)" % (ctype or "error", creason)
        if reason is not None and reason.endswith(tail):
            e["reason"] = reason[:-len(tail)]
        e["caused_by"] = {"type": ctype, "reason": creason}
    return e


_PSZ = ctypes.sizeof(c_void_p)


class _Batch:
    """One pulled batch, read: the fields of results [0, n) as columns
    (lists) in the order of _f, opaques (ints, 0 for none), and the error
    fields of the results not indexed {position: _ErrorFields}."""
    __slots__ = ("n", "cols", "opaques", "errors")

    def __init__(self, n: int, cols: List[List[Any]], opaques: List[int],
                 errors: Dict[int, _ErrorFields]
                 ) -> None:
        self.n, self.cols, self.opaques, self.errors = n, cols, opaques, errors

    def rows(self) -> Iterable[Tuple[Any, ...]]:
        return zip(*self.cols)


def _error_fields(p: int, keep_body: bool, blen: Any) -> _ErrorFields:
    L = lib
    body = None
    # asked whatever keep_body says: the library keeps the bodies for every
    # true value it takes (true, 1, yes) and answers NULL when it did not
    bp = L.esbulk_result_body(p, byref(blen))
    if bp:
        body = ctypes.string_at(bp, blen.value)
    return (_clib.dec(L.esbulk_result_error_type(p)), _clib.dec(L.esbulk_result_error_reason(p)),
            body, _clib.dec(L.esbulk_result_error_cause_type(p)),
            _clib.dec(L.esbulk_result_error_cause_reason(p)))


class _Reader:
    """Reads a pulled batch with esbulk_results_read: one call into the
    library for all its fields (about a dozen per result otherwise); the
    columns come out of the C arrays with memoryview.tolist() and str.split,
    C loops with no Python step per value."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.addr = ctypes.addressof(out)
        self.opq = (c_void_p * POLL_BATCH)()
        self.ints = (c_int32 * (POLL_BATCH * _clib.RESULT_INTS))()
        self.longs = (ctypes.c_int64 * (POLL_BATCH * _clib.RESULT_LONGS))()
        self.m_opq = memoryview(self.opq).cast("B").cast("P")
        self.m_ints = memoryview(self.ints).cast("B").cast("i")
        self.m_longs = memoryview(self.longs).cast("B").cast("q")
        self.strs = ctypes.create_string_buffer(POLL_BATCH * 64)
        self.used = c_size_t(0)
        self.blen = c_size_t(0)

    def read(self, n: int, keep_body: bool) -> _Batch:
        if not _clib.HAVE_RESULTS_READ:
            return self._read_each(n, keep_body)
        cols: List[List[Any]] = [[] for _ in range(12)]
        opaques: List[int] = []
        done = 0
        while done < n:
            k = lib.esbulk_results_read(self.addr + done * _PSZ, n - done, self.opq, self.ints,
                                        self.longs, self.strs, len(self.strs), byref(self.used))
            if k < 0:
                raise EsbulkError("esbulk_results_read: %s" % _clib.err2str(k), k)
            if k == 0:  # the strings of one result do not fit: a bigger buffer
                self.strs = ctypes.create_string_buffer(len(self.strs) * 4)
                continue
            opaques += self.m_opq[:k].tolist()
            iv = self.m_ints[:k * 6].tolist()
            lv = self.m_longs[:k * 3].tolist()
            sv = ctypes.string_at(self.strs, self.used.value).decode().split("\0")
            for j in range(6):
                cols[j] += iv[j::6]
            for j in range(3):
                cols[6 + j] += lv[j::3]
                cols[9 + j] += sv[j:3 * k:3]
            done += k
        flags = cols[5]
        if any(flags):
            idx, ids, res = cols[9], cols[10], cols[11]
            for i, fl in enumerate(flags):
                if fl:
                    if fl & _clib.RESULT_NO_INDEX:
                        idx[i] = None
                    if fl & _clib.RESULT_NO_ID:
                        ids[i] = None
                    if fl & _clib.RESULT_NO_RESULT:
                        res[i] = None
        errors = {}
        if any(cols[0]):
            out = self.out
            for i, oc in enumerate(cols[0]):
                if oc != _clib.OUTCOME_INDEXED:
                    errors[i] = _error_fields(out[i], keep_body, self.blen)
        return _Batch(n, cols, opaques, errors)

    def _read_each(self, n: int, keep_body: bool) -> _Batch:
        """A library without esbulk_results_read: one accessor call per field."""
        L = lib
        cols: List[List[Any]] = [[] for _ in range(12)]
        opaques: List[int] = []
        errors = {}
        for i in range(n):
            p = self.out[i]
            vals = [L.esbulk_result_outcome(p), L.esbulk_result_err(p), L.esbulk_result_op(p),
                    L.esbulk_result_status(p), L.esbulk_result_attempts(p), 0,
                    L.esbulk_result_seq_no(p), L.esbulk_result_primary_term(p),
                    L.esbulk_result_version(p)]
            for get in (L.esbulk_result_index, L.esbulk_result_id, L.esbulk_result_result):
                b = get(p)
                vals.append(b.decode() if b is not None else None)
            for j, v in enumerate(vals):
                cols[j].append(v)
            opaques.append(L.esbulk_result_opaque(p) or 0)
            if vals[0] != _clib.OUTCOME_INDEXED:
                errors[i] = _error_fields(p, keep_body, self.blen)
        return _Batch(n, cols, opaques, errors)


def _results(batch: _Batch, tokens: Dict[int, Tuple[Any, Any]],
             default_cb: Optional[ResultCallback]) -> List[Result]:
    """The batch as Result objects, each with its callback and context."""
    res = []
    append = res.append
    errors = batch.errors
    pop = tokens.pop
    new = _new_result
    for i, (f, tok) in enumerate(zip(batch.rows(), batch.opaques)):
        r = new(Result)
        r._f = f
        r._e = errors.get(i) if errors else None
        if tok:
            cb, r.context = pop(tok)
            r._cb = default_cb if cb is None else cb
        else:
            r._cb, r.context = default_cb, None
        append(r)
    return res
