"""esbulk.Indexer: the producer object over libesbulk's pull API."""
import array
import atexit
import collections
import ctypes
import itertools
import json
import logging
import threading
import time
import warnings
import weakref
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p
from typing import (Any, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence,
                    Tuple, Union)

from . import _clib
from ._clib import lib
from .errors import ConfigError, EsbulkError, InvalidDocumentError, QueueFullError
from ._json import Body, _dumps, encode_body
from ._conf import _aws_keys, _cred_keys, _make_conf, conf_key, conf_value, hosts_to_urls
from ._result import POLL_BATCH, Result, ResultCallback, _Batch, _Reader, _results
from ._actions import parse_action


SLICE_S = 0.2      # the longest single wait inside the library: Ctrl-C stays prompt

# The library's log lines (a node down, the cluster or an index not
# readable), pulled with the results (esbulk_log_take) and logged here, on
# the thread that pulls: never called back from the library's threads.
_log = logging.getLogger("esbulk")
_LOG_LEVELS = {3: logging.ERROR, 4: logging.WARNING, 5: logging.INFO, 6: logging.INFO,
               7: logging.DEBUG}


# esbulk_add_batch_opts with every array as a plain address (c_void_p): the
# arrays are array.array buffers (buffer_info()[0]); a function object of its
# own, so that lib.esbulk_add_batch_opts keeps its typed signature.
_add_batch_raw = lib["esbulk_add_batch_opts"]
_add_batch_raw.restype = c_int32
_add_batch_raw.argtypes = [c_void_p, c_size_t] + [c_void_p] * 10 + [c_void_p, c_char_p,
                                                                    c_size_t]
_INT_CODE = "i" if array.array("i").itemsize == 4 else "l"


def _at(a: Any, k: int) -> Optional[int]:
    """The address of element k of an array.array (None for None)."""
    if a is None:
        return None
    return a.buffer_info()[0] + k * a.itemsize  # type: ignore[no-any-return]


def _addr(b: bytes) -> int:
    """The address of a bytes object's own buffer (NUL-terminated)."""
    return ctypes.cast(c_char_p(b), c_void_p).value or 0


def _int_array(v: Union[int, List[int]], n: int) -> "array.array[int]":
    if isinstance(v, int):
        return array.array(_INT_CODE, (v,)) * n
    return array.array(_INT_CODE, v)


def _index_array(v: Union[bytes, List[bytes]], n: int, keep: List[Any]) -> "array.array[int]":
    """Pointers to NUL-terminated index names: one for all, or one each (the
    same names share one address)."""
    if isinstance(v, bytes):
        keep.append(v)
        return array.array(_clib.PTR_CODE, (_addr(v),)) * n
    addrs: Dict[bytes, int] = {}
    for b in set(v):
        addrs[b] = _addr(b)
    keep.append(v)
    return array.array(_clib.PTR_CODE, map(addrs.__getitem__, v))


def _bytes_arrays(v: List[Optional[bytes]], keep: List[Any]
                  ) -> Tuple["array.array[int]", "array.array[int]"]:
    """(pointers, lengths) of a list of bytes (None: NULL, length 0). When
    there is no None, the pointers are into one joined copy, made in C loops
    (join, accumulate, array); else one ctypes conversion per element."""
    try:
        big = b"".join(v)  # type: ignore[arg-type]
    except TypeError:  # a None (or not bytes)
        lens = array.array(_clib.SIZE_CODE, [len(b) if b else 0 for b in v])
        ptrs = (c_char_p * len(v))(*v)
        keep.append(ptrs)
        return array.array(_clib.PTR_CODE, memoryview(ptrs).cast("B").cast("P")), lens
    keep.append(big)
    lens = array.array(_clib.SIZE_CODE, map(len, v))  # type: ignore[arg-type]
    ptrs_a = array.array(_clib.PTR_CODE, itertools.accumulate(lens, initial=_addr(big)))
    return ptrs_a, lens


_EMPTY_ID_MSG = ("_id must not be empty (the server refuses an empty _id: if _id is specified "
                 "it must not be empty); leave it out for a generated one")


def _utf8(v: Any) -> Optional[bytes]:
    """An _id or routing as bytes: None stays None, str is encoded to UTF-8,
    bytes (bytearray, memoryview) are sent as they are (the library refuses
    them if not UTF-8), anything else as opensearch-py writes it into the
    action line (an int id as its digits)."""
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if type(v) is int:
        return str(v).encode()
    if isinstance(v, float):
        return repr(v).encode()  # as json writes it
    # as opensearch-py's serializer writes it in the action line: True as
    # true, a datetime in ISO 8601, a Decimal as its float (TypeError for
    # what it cannot serialize)
    j = _dumps(v)
    return json.loads(j).encode("utf-8") if j[:1] == b'"' else j


def _encode_strs(v: Sequence[Any]) -> List[Optional[bytes]]:
    """ids / routings -> UTF-8 bytes (see _utf8)."""
    try:
        return list(map(str.encode, v))
    except TypeError:
        return list(map(_utf8, v))


def _encode_all(bodies: Iterable[Body]) -> List[Optional[bytes]]:
    """encode_body of each, with the common cases (dict, bytes) inline."""
    d = _dumps
    return [b if type(b) is bytes else d(b) if type(b) is dict else encode_body(b)
            for b in bodies]


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
    - ``aws_credentials``: AWS credentials to sign with (with ``auth.aws.region``,
      and ``auth.aws.service`` for Serverless): botocore's / boto3's
      (``boto3.Session().get_credentials()``) or anything with ``access_key``,
      ``secret_key`` and ``token``. Refreshable ones (instance, task or pod
      roles, assumed roles, SSO) are read again, frozen, at most every
      minute while results are pulled, and the handle updated
      (``update_auth``) when they changed, so that a long run outlives them.
    - ``credentials``: a function giving a password or a key that rotates
      (read from a vault, a file, a secrets manager): it returns a
      ``(username, password)`` pair or a dict of ``username``, ``password``,
      ``api_key`` and ``bearer``. Called once here, then again at most every
      ``credentials_refresh_s`` seconds (60) while results are pulled; the
      handle is updated (``update_auth``) when they changed, each time after
      the results were pulled. An exception it raises, or credentials of
      another kind than the first, propagate out of that poll, flush or close
      (or a blocking add, once all its documents are added); the credentials
      in use stay, the results pulled stay queued, and it is called again
      when next due.

    Results reach the callbacks only inside poll(), flush() and close(), on
    the thread that called them: they are pulled from the library in batches
    (esbulk_poll_results), never called back from C. An exception raised by a
    callback stops that call and propagates out of it; the results not yet
    handed out stay queued for the next call. add() may be called from any
    number of threads; poll/flush/close from one at a time.
    """

    # An Indexer still open at interpreter exit is closed then, waiting this
    # many seconds at most for its documents (0: dropped at once).
    exit_timeout: float = 5.0

    # How often refreshable AWS credentials are read again (seconds); botocore
    # refreshes them 15 minutes before they expire.
    aws_refresh_s: float = 60.0

    # How often the credentials function is called again (seconds).
    credentials_refresh_s: float = 60.0

    def __init__(self, hosts: Any = None, *, on_result: Optional[ResultCallback] = None,
                 block: bool = False, aws_credentials: Any = None,
                 credentials: Optional[Callable[[], Any]] = None, **conf: Any) -> None:
        self._eb: Optional[int] = None
        # credentials read again while results are pulled (refreshable AWS
        # ones, or credentials=): what gives their auth.* keys whole, the
        # keys the handle has, when they were read last (time.monotonic),
        # and the attribute that says how often
        self._auth_source: Optional[Callable[[], Dict[str, str]]] = None
        self._auth_keys: Dict[str, str] = {}
        self._auth_read = 0.0
        self._auth_every = "aws_refresh_s"
        self._on_result = on_result
        self._block = block
        self._tokens: Dict[int, Tuple[Any, Any]] = {}
        self._next_token = itertools.count(1).__next__
        self._ready: Deque[Result] = collections.deque()
        self._out = (c_void_p * POLL_BATCH)()
        self._log_level = c_int32()
        self._log_fac = ctypes.create_string_buffer(32)
        self._log_msg = ctypes.create_string_buffer(1024)
        self._reader = _Reader(self._out)
        # helpers: called with each pulled _Batch instead of making Results
        # (their opaques are then the helper's own numbers, not tokens)
        self._sink: Optional[Callable[[_Batch], None]] = None
        # a callback's exception met while a blocked add waited for room
        self._deferred: Optional[BaseException] = None
        self._lock = threading.RLock()   # one poller at a time
        # calls into the handle made outside self._lock (adds, stats,
        # update_auth, len): close() frees the handle only once none is in
        # one, and refuses new adds from its start
        self._users = 0
        self._closing = False
        self._users_cv = threading.Condition(threading.Lock())
        self._index_cache: Dict[str, bytes] = {}
        self._errstr = ctypes.create_string_buffer(1024)
        settings: List[Tuple[str, str]] = []
        urls = hosts_to_urls(hosts)
        if urls is not None:
            settings.append(("urls", urls))
        for name, value in conf.items():
            if value is not None:
                settings.append((conf_key(name), conf_value(value, conf_key(name))))
        if aws_credentials is not None:
            keys = _aws_keys(aws_credentials)
            settings.extend(keys.items())
            if callable(getattr(aws_credentials, "get_frozen_credentials", None)):
                scope = {k: v for k, v in settings if k in ("auth.aws.region", "auth.aws.service")}
                self._auth_source = lambda: dict(scope, **_aws_keys(aws_credentials))
                self._auth_keys = dict(scope, **keys)
                self._auth_read = time.monotonic()
        if credentials is not None:
            if not callable(credentials):
                raise TypeError("credentials: a function returning the credentials, not %s"
                                % (type(credentials).__name__,))
            if aws_credentials is not None:
                raise ConfigError("credentials and aws_credentials: set one",
                                  _clib.ERR_BAD_VALUE)
            given = [k for k, _ in settings if k.startswith("auth.")]
            if given:
                raise ConfigError("credentials gives the credentials: %s too (set one)"
                                  % ", ".join(given), _clib.ERR_BAD_VALUE)
            keys = _cred_keys(credentials())
            settings.extend(keys.items())
            self._auth_source = lambda: _cred_keys(credentials())
            self._auth_keys = keys
            self._auth_read = time.monotonic()
            self._auth_every = "credentials_refresh_s"
        self._keep_body = any(k == "result.keep_body" and v == "true" for k, v in settings)
        c = _make_conf(settings)
        try:
            err = ctypes.create_string_buffer(512)
            eb = lib.esbulk_new(c, err, len(err))
            if not eb:
                msg = _clib.dec(err.value) or "failed"
                if msg == "out of memory":
                    raise MemoryError("esbulk_new: out of memory")
                if msg.startswith("cannot start"):  # a thread: not the configuration
                    raise EsbulkError("esbulk_new: %s" % msg)
                # the rest is the configuration's fault (a URL that cannot be
                # used, no URL, credentials that conflict): a ValueError
                raise ConfigError("esbulk_new: %s" % msg, _clib.ERR_BAD_VALUE)
            self._eb = eb
            _open.add(self)
        finally:
            lib.esbulk_conf_destroy(c)

    def update_auth(self, **conf: Any) -> None:
        """Replaces the handle's credentials (esbulk_auth_update(3)) for the
        requests that start from now: ``auth.*`` keys of the same kind as the
        Indexer's, whole (``**{"auth.aws.region": ..., ...}`` or
        ``auth_aws_region=...``). Raises ConfigError when they do not go
        together or are of another kind. Thread-safe."""
        settings = [(conf_key(n), conf_value(v, conf_key(n)))
                    for n, v in conf.items() if v is not None]
        c = _make_conf(settings)
        try:
            err = ctypes.create_string_buffer(512)
            eb = self._enter()
            try:
                rc = lib.esbulk_auth_update(eb, c, err, len(err))
            finally:
                self._leave()
        finally:
            lib.esbulk_conf_destroy(c)
        if rc == _clib.ERR_NOMEM:
            raise MemoryError("esbulk_auth_update: out of memory")
        if rc != _clib.OK:
            raise ConfigError("update_auth: %s" % (_clib.dec(err.value) or _clib.err2str(rc)), rc)

    def _refresh_auth(self) -> None:
        """The credentials read again (refreshable AWS ones frozen, or
        credentials() called); the handle updated when they changed."""
        self._auth_read = time.monotonic()
        keys = self._auth_source()  # type: ignore[misc]
        if keys != self._auth_keys:
            self.update_auth(**keys)
            self._auth_keys = keys

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

    def _enter(self, adding: bool = False) -> int:
        """The handle, for a call made outside self._lock: close() does not
        free it until _leave(). An add is refused from close()'s start."""
        with self._users_cv:
            if self._eb is None or (adding and self._closing):
                raise EsbulkError("the Indexer is closed", _clib.ERR_CLOSED)
            self._users += 1
            return self._eb

    def _leave(self) -> None:
        with self._users_cv:
            self._users -= 1
            if not self._users:
                self._users_cv.notify_all()

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
            given = [k for k, v in (("body", body), ("id", id), ("routing", routing),
                                    ("version", version), ("version_type", version_type),
                                    ("if_seq_no", if_seq_no),
                                    ("if_primary_term", if_primary_term),
                                    ("pipeline", pipeline), ("require_alias", require_alias),
                                    ("retry_on_conflict", retry_on_conflict))
                     if v is not None] + (["op"] if op != "index" else [])
            if given:
                raise TypeError("Indexer.add: an action dict is the whole action; put %s in "
                                "it (as _op_type, _id, _routing, ...), not beside it"
                                % ", ".join(given))
            self.add_actions((index,), on_result=on_result, context=context)
            return
        self._handle()
        opc = _clib.OPS.get(op)
        if opc is None:
            raise InvalidDocumentError("op must be index, create, update or delete, not %r"
                                       % (op,), _clib.ERR_INVALID_ARG)
        ib = self._index_bytes(index)
        idb = _utf8(id)
        if idb == b"":
            self._raise_add(_clib.ERR_INVALID_ARG, _EMPTY_ID_MSG, 0)
        rb = _utf8(routing)
        bb = encode_body(body)
        opts = self._make_opts(version, version_type, if_seq_no, if_primary_term, pipeline,
                               require_alias, retry_on_conflict)
        tok = self._token(on_result, context)
        err = ctypes.create_string_buffer(256)
        try:
            while True:
                try:
                    eb = self._enter(adding=True)
                except EsbulkError:
                    if tok is not None:
                        self._tokens.pop(tok, None)
                    raise
                try:
                    rc = lib.esbulk_add_opts(eb, opc, ib, idb, len(idb) if idb else 0, rb,
                                             len(rb) if rb else 0, bb, len(bb) if bb else 0,
                                             opts, tok, err, len(err))
                finally:
                    self._leave()
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
        self._raise_deferred()

    def _raise_add(self, rc: int, msg: Optional[str], accepted: int) -> None:
        text = msg or _clib.err2str(rc)
        e: BaseException
        if rc == _clib.ERR_QUEUE_FULL:
            e = QueueFullError("esbulk: queue full: %s (poll() or flush() to make room)"
                               % text, rc, accepted)
        elif rc == _clib.ERR_CLOSED:
            e = EsbulkError("esbulk: the Indexer is closed", rc, accepted)
        elif rc == _clib.ERR_NOMEM:
            e = MemoryError(text)
        else:
            e = InvalidDocumentError("esbulk: document %d refused: %s" % (accepted, text), rc,
                                     accepted)
            e.reason = text  # the library's own words (the helpers' failed item)
        # a callback's exception met while this add waited for room: its context
        e.__context__, self._deferred = self._deferred, None
        raise e

    def _wait_for_room(self) -> None:
        # A full buffer will not drain by waiting for flush.interval.ms: send
        # now and serve what comes back (flush returns once all are served).
        try:
            self.flush(SLICE_S / 2)
        except Exception as e:
            # a callback's: the add goes on (its caller could not tell which
            # of its documents were added), and raises it once they all are
            if self._deferred is None:
                self._deferred = e

    def _raise_deferred(self) -> None:
        e, self._deferred = self._deferred, None
        if e is not None:
            raise e

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
        bl = _encode_all(bodies)
        n = len(bl)
        for name, v in (("ids", ids), ("routings", routings), ("contexts", contexts)):
            if v is not None and len(v) != n:
                raise ValueError("add_many: %d %s for %d bodies (they must be as many)"
                                 % (len(v), name, n))
        if n == 0:
            return 0
        opc = _clib.OPS.get(op)
        if opc is None:
            raise InvalidDocumentError("unknown op %r" % (op,), _clib.ERR_INVALID_ARG)
        ib = self._index_bytes(index)
        idl = None if ids is None else _encode_strs(ids)
        rtl = None if routings is None else _encode_strs(routings)
        if contexts is None and on_result is None:
            toks = None
        else:
            toks = [self._token(on_result, None if contexts is None else contexts[k])
                    for k in range(n)]
        n = self._add_batch(opc, ib, idl, rtl, bl, None, toks)
        self._raise_deferred()
        return n

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
        elif len(contexts) != len(prepared):
            raise ValueError("add_actions: %d contexts for %d actions (they must be as many)"
                             % (len(contexts), len(prepared)))
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
                idl.append(_utf8(id_))
                rtl.append(_utf8(routing))
                bl.append(body)
                optl.append(self._make_opts(**o) if o else None)
            toks = [self._token(on_result, contexts[k] if contexts is not None else None)
                    for k in range(len(ops))]
            submitted = True
            n = self._add_batch(ops, idx, idl, rtl, bl, optl if any(optl) else None,
                                toks if any(t is not None for t in toks) else None)
            self._raise_deferred()
            return n
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

    def _add_batch(self, ops: Union[int, List[int]], indices: Union[bytes, List[bytes]],
                   ids: Optional[List[Any]], routings: Optional[List[Any]],
                   bodies: List[Optional[bytes]], opts: Optional[List[Optional[int]]],
                   toks: Optional[List[Optional[int]]]) -> int:
        """One esbulk_add_batch_opts call for len(bodies) documents (again
        from where it stopped while the buffer is full and the Indexer
        blocks). ops / indices: one for all, or one per document. The C
        arrays are made by array.array from the lists (C loops): no ctypes
        conversion per element."""
        self._handle()
        n = len(bodies)
        # the C call reads n elements of every array: a shorter one would be
        # read past its end
        for name, v in (("ops", ops), ("indices", indices), ("ids", ids),
                        ("routings", routings), ("opts", opts), ("toks", toks)):
            if v is not None and not isinstance(v, (int, bytes)) and len(v) != n:
                raise ValueError("esbulk: %d %s for %d bodies (they must be as many)"
                                 % (len(v), name, n))
        if routings is not None and not any(r is not None for r in routings):
            routings = None
        if ids is not None and not any(i is not None for i in ids):
            ids = None
        if ids is not None and b"" in ids:
            # a zero-length id is "none" to the library, which would generate
            # one; the server refuses an empty _id: so is it here
            k = ids.index(b"")
            try:
                if k:
                    def cut(v: Any) -> Any:
                        return v if v is None or isinstance(v, (int, bytes)) else v[:k]
                    self._add_batch(cut(ops), cut(indices), ids[:k], cut(routings), bodies[:k],
                                    cut(opts), cut(toks))
            finally:
                if toks is not None and not isinstance(toks, range):
                    for t in toks[k:]:
                        if t is not None:
                            self._tokens.pop(t, None)
            self._raise_add(_clib.ERR_INVALID_ARG, _EMPTY_ID_MSG, k)
        keep: List[Any] = []  # what the C arrays point into, alive until the call returns
        a_ops = _int_array(ops, n)
        a_idx = _index_array(indices, n, keep)
        a_ids = a_idl = a_rt = a_rtl = a_opts = a_tok = None
        if ids is not None:
            a_ids, a_idl = _bytes_arrays(ids, keep)
        if routings is not None:
            a_rt, a_rtl = _bytes_arrays(routings, keep)
        a_b, a_bl = _bytes_arrays(bodies, keep)
        if opts is not None:
            a_opts = array.array(_clib.PTR_CODE, [o or 0 for o in opts])
        if isinstance(toks, range):  # the helpers' own numbers
            a_tok = array.array(_clib.PTR_CODE, toks)
        elif toks is not None:
            a_tok = array.array(_clib.PTR_CODE, [t or 0 for t in toks])
        start = 0
        err = ctypes.create_string_buffer(512)
        accepted = c_size_t(0)
        while True:
            m = n - start
            try:
                eb = self._enter(adding=True)
            except EsbulkError:
                if toks is not None and not isinstance(toks, range):
                    for t in toks[start:]:
                        if t is not None:
                            self._tokens.pop(t, None)
                self._raise_add(_clib.ERR_CLOSED, "", start)
                raise
            try:
                accepted.value = 0
                rc = _add_batch_raw(eb, m, _at(a_ops, start), _at(a_idx, start),
                                    _at(a_ids, start), _at(a_idl, start), _at(a_rt, start),
                                    _at(a_rtl, start), _at(a_b, start), _at(a_bl, start),
                                    _at(a_opts, start), _at(a_tok, start), byref(accepted), err,
                                    len(err))
            finally:
                self._leave()
            start += accepted.value
            if rc == _clib.OK:
                return n  # its callers raise a deferred exception (add_many, add_actions)
            if rc == _clib.ERR_QUEUE_FULL and self._block:
                self._wait_for_room()
                continue
            if toks is not None and not isinstance(toks, range):
                for t in toks[start:]:
                    if t is not None:
                        self._tokens.pop(t, None)
            self._raise_add(rc, _clib.dec(err.value), start)

    # -- results ----------------------------------------------------------

    def _take_log(self, eb: int) -> None:
        """Logs the library's lines kept since the last pull (logger "esbulk")."""
        lvl, fac, msg = self._log_level, self._log_fac, self._log_msg
        while lib.esbulk_log_take(eb, byref(lvl), fac, len(fac), msg, len(msg)) == 1:
            _log.log(_LOG_LEVELS.get(lvl.value, logging.INFO), "%s: %s", _clib.dec(fac.value),
                     _clib.dec(msg.value))

    def _pull(self, timeout_ms: int) -> int:
        """Pulls one batch into self._ready and releases it at once."""
        eb = self._handle()
        n = lib.esbulk_poll_results(eb, self._out, POLL_BATCH, timeout_ms)
        self._take_log(eb)
        if n < 0:
            raise EsbulkError("esbulk_poll_results: %s" % _clib.err2str(n), n)
        if n:
            try:
                batch = self._reader.read(n, self._keep_body)
            finally:
                lib.esbulk_results_release(eb)
            if self._sink is not None:
                self._sink(batch)
            else:
                self._ready.extend(_results(batch, self._tokens, self._on_result))
        # after the pull, so that one that raises every time still lets the
        # results through (a blocked add or a flush waits on them)
        if self._auth_source is not None and \
                time.monotonic() >= self._auth_read + getattr(self, self._auth_every):
            self._refresh_auth()
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
        with self._users_cv:
            # adds refused from now on; one waiting for room sees it within
            # a slice (it waits outside the handle: not a user then)
            self._closing = True
        with self._lock:
            if self._eb is None:
                return 0
            first: Optional[BaseException] = None
            deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
            while True:
                try:
                    left = self.flush(None if deadline is None else
                                      max(0.0, deadline - time.monotonic()))
                    break
                except Exception as e:  # a callback's: keep flushing, raise it at the end
                    if first is None:
                        first = e
                    # or the credentials function's: not called again here
                    # (with no wait between calls, it would loop)
                    self._auth_source = None
                    if deadline is not None and time.monotonic() >= deadline:
                        left = len(self)
                        break
            lib.esbulk_close(self._eb, 0)
            self._auth_source = None  # no request starts from now
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
            with self._users_cv:  # no call of another thread still in the handle
                while self._users:
                    self._users_cv.wait()
                eb, self._eb = self._eb, None
            _open.discard(self)
            lib.esbulk_destroy(eb)
            if first is not None:
                raise first
            return left

    def __len__(self) -> int:
        """Documents added whose result has not been served yet."""
        try:
            eb = self._enter()
        except EsbulkError:
            return len(self._ready)
        try:
            return int(lib.esbulk_pending(eb)) + len(self._ready)
        finally:
            self._leave()

    def stats(self) -> Dict[str, Any]:
        """libesbulk's statistics (esbulk_stats_json(3)) as a dict."""
        eb = self._enter()
        try:
            p = lib.esbulk_stats_json(eb)
        finally:
            self._leave()
        if not p:
            raise MemoryError("esbulk_stats_json")
        try:
            return json.loads(ctypes.string_at(p))  # type: ignore[no-any-return]
        finally:
            lib.esbulk_free(p)

    def __enter__(self) -> "Indexer":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        # Ctrl-C: close at once (what was not sent fails, what was in flight
        # may be indexed), as the helpers do, rather than wait without limit
        # for a cluster that may be the reason for it
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        self.close(0 if interrupted else None)

    def __del__(self) -> None:
        """Garbage-collected unclosed: the handle is closed at once (timeout
        0: no wait and no callback here, where the collector may run at any
        point of any thread), its unserved results dropped, and it says so:
        a ResourceWarning, and a WARNING on the "esbulk" logger with the
        documents dropped when there were any."""
        eb = getattr(self, "_eb", None)
        if eb is None:
            return
        self._eb = None
        try:
            pending = int(lib.esbulk_pending(eb)) + len(self._ready)
            counts = [0, 0, 0]  # indexed, failed (not sent), possibly
            if pending:
                lib.esbulk_close(eb, 0)
                counts = _outcomes_left(eb, self._out)
                for r in self._ready:
                    if 0 <= r.outcome_code < 3:
                        counts[r.outcome_code] += 1
            lib.esbulk_destroy(eb)
            what = "esbulk.Indexer garbage-collected without close()"
            warnings.warn("unclosed %r: %s" % (self, what), ResourceWarning, source=self)
            if pending:
                _log.warning("%s: %d document(s) had no result served; %d not delivered "
                             "(dropped), %d possibly indexed (their request was in flight), "
                             "%d indexed. Call close() (or use `with`) to send them and get "
                             "their results.", what, pending, counts[1], counts[2], counts[0])
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def _outcomes_left(eb: int, out: Any) -> List[int]:
    """Pulls the results left on a closed handle without serving them:
    how many were [indexed, failed, possibly]."""
    counts = [0, 0, 0]
    while True:
        n = lib.esbulk_poll_results(eb, out, POLL_BATCH, 0)
        if n <= 0:
            return counts
        try:
            for i in range(n):
                oc = lib.esbulk_result_outcome(out[i])
                if 0 <= oc < 3:
                    counts[oc] += 1
        finally:
            lib.esbulk_results_release(eb)


# Indexers not closed yet: those still open at interpreter exit are closed
# then, waiting at most Indexer.exit_timeout seconds in all (never hanging
# the exit), their results served.
_open: "weakref.WeakSet[Indexer]" = weakref.WeakSet()


def _close_at_exit() -> None:
    left_ixs = list(_open)
    if not left_ixs:
        return
    deadline = time.monotonic() + max(ix.exit_timeout for ix in left_ixs)
    for ix in left_ixs:
        try:
            if ix._eb is None:
                continue
            pending = len(ix)
            if pending:
                _log.warning("esbulk.Indexer not closed at exit: closing it, waiting up to "
                             "%.1f s for %d document(s) without a result",
                             max(0.0, deadline - time.monotonic()), pending)
            # a thread left polling (a daemon) may hold the lock: do not wait for it forever
            if not ix._lock.acquire(timeout=max(0.01, deadline - time.monotonic())):
                _log.warning("esbulk.Indexer not closed at exit: another thread is using it; "
                             "%d document(s) dropped", pending)
                continue
            try:
                left = ix.close(max(0.0, min(ix.exit_timeout, deadline - time.monotonic())))
            finally:
                ix._lock.release()
            if left:
                _log.warning("esbulk.Indexer closed at exit: %d document(s) were not "
                             "delivered in time (see their results)", left)
        except Exception as e:  # a callback's, or anything else: the exit goes on
            _log.warning("esbulk.Indexer closed at exit: %s: %s", type(e).__name__, e)


atexit.register(_close_at_exit)
