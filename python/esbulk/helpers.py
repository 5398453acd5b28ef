"""Drop-in replacements of opensearch-py's / elasticsearch-py's bulk helpers.

    from opensearchpy import OpenSearch, helpers      # before
    from opensearchpy import OpenSearch; from esbulk import helpers   # after

bulk(), streaming_bulk() and parallel_bulk() take the same arguments, return
the same values and raise the same exceptions (BulkIndexError with .errors, a
subclass of the BulkIndexError of opensearch-py and elasticsearch-py, of those
installed) as the peer of the client they are given: each peer's signature of
its installed version, its expand_action. The module has every other name of
the installed peers' helpers too (scan, reindex, the async helpers,
BULK_FLUSH, ScanError, errors...): what libesbulk does not speed up is the
peer's own (see _peers). What differs, and why:

- ``client`` may be an opensearch-py / elasticsearch-py client (its hosts,
  credentials and TLS settings are read from it: it is never called) or a URL
  string or list of URLs. A client whose bulk() is not the peer's own (a
  mock, a wrapper with a bulk of its own) goes to the peer's helper, which
  calls it.
- Documents are sent by libesbulk: straight to the node of their primary
  shard, up to max.inflight.per.node requests per node at once, and every
  item refused with 429 (or 503) is retried with backoff in every helper,
  whatever ``max_retries`` says (it raises the library's retry.max when larger).
- Results are yielded chunk by chunk (chunk_size / max_chunk_bytes) in the
  order of the actions, as the peer does; the library keeps several chunks in
  flight meanwhile: enough to keep every node's max.inflight.per.node requests
  busy with more queued behind them (at least 10,000 documents, at most
  100,000 without a result, and the actions of 1.5 times as many held until
  they are yielded). When raise_on_error stops the helper, the chunks already
  handed to the library are still sent, where the peer would not have sent
  them.
- A document that could not be delivered at all (connection refused, timeout,
  retries used up) is reported like the peer's failed request: raised as
  esbulk.TransportError when raise_on_exception, else an item with "error",
  "status", "exception" and the action's data.
- A document the library refuses at add time (not JSON, over max.doc.bytes,
  which the helpers raise to the server's 100 MiB) is a failed item (400) of
  its own in its place; the rest go on.
- Keyword arguments the peer passes to client.bulk(): ``index`` (the default
  _index), ``pipeline``, ``refresh``, ``timeout`` / ``request_timeout``
  (seconds) are supported; ``esbulk_conf={...}`` passes any libesbulk key.
  Others raise TypeError rather than be silently ignored.
"""
import inspect
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from . import _peers
from ._bulk import (_META, _META_ES, _UNDERSCORED, HELPERS_MAX_DOC_BYTES, IN_FLIGHT_DOCS,
                    MAX_AHEAD_DOCS, _expand, expand_action, _expand_for, _default_expand,
                    _BulkMeta, _es_helpers, BULK_FLUSH, _PEER_FLUSH, _META_SET, _META_SET_ES,
                    _FAST_META, _shape, _Chunk, _OPTS, _ACTION_LINE_KEYS, _window, _indexer_for,
                    _TIME_UNITS, _UNUSABLE_KEYS, _request_failure, _chunk_outcomes, _sink_for,
                    _Reader, _streaming_bulk, _REFUSED_AT_ADD, _encode_ids, _jlen, _IDLE, _FLUSH,
                    _refused_outcomes)  # noqa: F401 (the module's names)
from ._client import (_auth_from_header, _CLIENT_HEADERS, client_conf, _AUTH_KEYS, _aws_signer,
                      _refreshable_creds, _client_refreshable_creds, _aws_conf, _set_auth,
                      _pass_headers)  # noqa: F401 (the module's names)
from ._indexer import Indexer  # noqa: F401 (a name of the module)
from . import errors as _errors


# The peers' signatures, by peer and function (see _bind).
_SIGNATURES: Dict[Tuple[Optional[str], str], inspect.Signature] = {}


def _own_bulk(client: Any, actions: Iterable[Any], stats_only: bool = False,
              ignore_status: Any = (), *args: Any, **kwargs: Any) -> Any:
    """bulk's signature when no peer is installed."""


def _own_parallel_bulk(client: Any, actions: Iterable[Any], thread_count: int = 4,
                       chunk_size: int = 500, max_chunk_bytes: int = 100 * 1024 * 1024,
                       queue_size: int = 4,
                       expand_action_callback: Callable[[Any], Tuple[Any, Any]] = expand_action,
                       raise_on_exception: bool = True, raise_on_error: bool = True,
                       ignore_status: Any = (), *args: Any, **kwargs: Any) -> Any:
    """parallel_bulk's signature when no peer is installed."""


_OWN = {"streaming_bulk": _streaming_bulk, "bulk": _own_bulk,
        "parallel_bulk": _own_parallel_bulk}


def _signature(peer: Optional[str], name: str) -> inspect.Signature:
    sig = _SIGNATURES.get((peer, name))
    if sig is None:
        f = getattr(_peers.module(peer), name, None) if peer is not None else None
        sig = _SIGNATURES[(peer, name)] = inspect.signature(f if f is not None else _OWN[name])
    return sig


def _peer_function(client: Any, name: str) -> Any:
    """The peer's own helper name when client's bulk() must be called (a
    mock, a wrapper of the user's: see _peers.calls_its_own_bulk), else
    None."""
    if _peers.calls_its_own_bulk(client):
        return getattr(_peers.module(_peers.of_client(client)), name, None)
    return None


def _bind(name: str, client: Any, actions: Any, args: Tuple[Any, ...],
          kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The arguments of a call of helper name, as the peer of client takes
    them (its signature in its installed version: the two peers put their
    parameters in different orders), by name. A TypeError, as the peer's,
    for an argument it does not take; the peers pass extra positional
    arguments on to client.bulk(), which libesbulk does not call."""
    sig = _signature(_peers.of_client(client), name)
    ba = sig.bind(client, actions, *args, **kwargs)
    out: Dict[str, Any] = {}
    for pname, value in ba.arguments.items():
        kind = sig.parameters[pname].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise TypeError("esbulk.helpers.%s: extra positional arguments %r (the peer "
                                "passes them to client.bulk(), which libesbulk does not call)"
                                % (name, value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:
            out[pname] = value
    out.pop("client", None)
    out.pop("actions", None)
    return out


def streaming_bulk(client: Any, actions: Iterable[Any], *args: Any,
                   **kwargs: Any) -> Iterator[Any]:
    """As the peer's streaming_bulk (its signature: that of the
    client's peer, opensearch-py's or elasticsearch-py's, as installed): yields (ok, {op_type: item}) per
    action, in order. raise_on_error raises BulkIndexError with the failed
    items of the first chunk that has some (each with its "data");
    raise_on_exception raises esbulk.TransportError for a document that
    could not be delivered. Item 429s are retried by the library whatever
    max_retries (initial_backoff / max_backoff do not apply: libesbulk's
    backoff with jitter does, retry.backoff.ms / retry.backoff.max.ms).

    Two keyword arguments of its own:

    - ``yield_action=True`` yields ``(ok, {op_type: item}, action)``: the
      object the actions iterable gave, as given (for a dead-letter queue or
      a retry of your own).
    elasticsearch-py's BULK_FLUSH among the actions sends the chunk read so
    far; its retry_on_status is taken (429 and 503 items are retried by
    the library, see above; another status with max_retries raises
    ValueError), its span_name too (no OpenTelemetry span is made).

    - ``flush_after_seconds=S`` (elasticsearch-py 8.19's): the actions are read
      by a thread of their own, and when none came for S seconds the partial
      chunk is sent; the results that are ready are yielded meanwhile. Without
      it the actions are read on the caller's thread and the results that
      came are yielded between actions (every 64), so a slow generator still
      sees its results as it goes, but a partial chunk waits for the next
      action or the end.
    """
    peer = _peer_function(client, "streaming_bulk")
    if peer is not None:
        return peer(client, actions, *args, **kwargs)  # type: ignore[no-any-return]
    return _streaming_bulk(client, actions, **_bind("streaming_bulk", client, actions, args,
                                                     kwargs))


def __getattr__(name: str) -> Any:
    if name in ("BulkIndexError", "ScanError"):  # made on first use (see esbulk.errors)
        return getattr(_errors, name)
    if not name.startswith("__"):
        # the rest of the peers' helpers (their AWS signers, submodules,
        # _chunk_actions...), as they are: the client's peer is not known
        # here, the primary one's first
        for mod in _peers.helpers_modules():
            if hasattr(mod, name):
                return getattr(mod, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__() -> List[str]:
    names = set(globals()) | {"BulkIndexError", "ScanError"}
    for mod in _peers.helpers_modules():
        names.update(n for n in dir(mod) if not n.startswith("__"))
    return sorted(names)


def bulk(client: Any, actions: Iterable[Any], *args: Any, **kwargs: Any) -> Tuple[int, Any]:
    """As the peer's bulk: (number of successes, list of errors) or, with
    stats_only, (successes, failures). Raises BulkIndexError when
    raise_on_error (the default) and a document failed. Takes every argument
    of streaming_bulk."""
    peer = _peer_function(client, "bulk")
    if peer is not None:
        return peer(client, actions, *args, **kwargs)  # type: ignore[no-any-return]
    kwargs = _bind("bulk", client, actions, args, kwargs)
    stats_only = kwargs.pop("stats_only", False)
    success, failed = 0, 0
    errors: List[Any] = []
    if kwargs.pop("yield_action", False):
        raise TypeError("esbulk.helpers.bulk: yield_action is for streaming_bulk and "
                        "parallel_bulk (bulk returns counts and errors)")
    kwargs["yield_ok"] = True
    kwargs["_esbulk_counts"] = True
    kwargs.setdefault("span_name", "helpers.bulk")
    for x in _streaming_bulk(client, actions, **kwargs):
        if type(x) is int:  # a chunk with no failure
            success += x
            continue
        ok, item = x
        if not ok:
            if not stats_only:
                errors.append(item)
            failed += 1
        else:
            success += 1
    return success, failed if stats_only else errors


def parallel_bulk(client: Any, actions: Iterable[Any], *args: Any,
                  **kwargs: Any) -> Iterator[Any]:
    """As the peer's parallel_bulk, without threads of its own: the
    library sends max.inflight.per.node requests per node at once (set
    ``esbulk_conf={"max.inflight.per.node": N}`` to change it), and, unlike
    the peer's, retries item 429s. thread_count and queue_size are accepted
    and unused."""
    peer = _peer_function(client, "parallel_bulk")
    if peer is not None:
        return peer(client, actions, *args, **kwargs)  # type: ignore[no-any-return]
    kwargs = _bind("parallel_bulk", client, actions, args, kwargs)
    kwargs.pop("thread_count", None)
    kwargs.pop("queue_size", None)
    return _streaming_bulk(client, actions, **kwargs)


def _by_client(name: str, client: Any) -> Any:
    """The peer's own helper name for client's peer (scan, async_*: what
    libesbulk does not speed up)."""
    peer = _peers.of_client(client)
    f = getattr(_peers.module(peer), name, None)
    if f is None:
        raise NotImplementedError("esbulk.helpers.%s is the peer's: install opensearch-py or "
                                  "elasticsearch-py" % name)
    return f


def scan(client: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    """The peer's scan (that of client's peer), its ScanError raised as
    esbulk.helpers.ScanError (a subclass of both peers')."""
    f = _by_client("scan", client)
    mod = _peers.module(_peers.of_client(client))
    peer_error = getattr(mod, "ScanError", ())
    try:
        yield from f(client, *args, **kwargs)
    except peer_error as e:  # type: ignore[misc]
        if isinstance(e, _errors.scan_error()):
            raise
        raise _errors.scan_error()(e.scroll_id, *e.args) from e


def reindex(client: Any, source_index: Any, target_index: Any, *args: Any,
            **kwargs: Any) -> Tuple[int, Any]:
    """As the peer's reindex (its signature: that of client's peer): the
    documents read with the peer's scan, written with esbulk's bulk."""
    flavour = _peers.of_client(client)
    target = kwargs.get("target_client") or (args[1] if len(args) > 1 else None)
    if _peers.is_mock(client) or _peers.calls_its_own_bulk(target or client):
        return _by_client("reindex", client)(  # type: ignore[no-any-return]
            client, source_index, target_index, *args, **kwargs)
    f = _by_client("reindex", client)
    ba = inspect.signature(f).bind(client, source_index, target_index, *args, **kwargs)
    ba.apply_defaults()
    a = ba.arguments
    target_client = client if a.get("target_client") is None else a["target_client"]
    op_type = a.get("op_type")
    docs = scan(client, query=a.get("query"), index=source_index, scroll=a.get("scroll"),
                **(a.get("scan_kwargs") or {}))
    if flavour == _peers.ELASTICSEARCH:
        # as elasticsearch-py's: into a data stream, documents are created
        exc = _peers.module(flavour, "exceptions")
        try:
            streams = target_client.indices.get_data_stream(name=target_index,
                                                            expand_wildcards="all")
            is_stream = any(d["name"] == target_index for d in streams["data_streams"])
        except (exc.TransportError, KeyError, exc.NotFoundError):  # type: ignore[union-attr]
            is_stream = False
        if is_stream:
            if op_type not in (None, "create"):
                raise ValueError("Data streams must have 'op_type' set to 'create'")
            op_type = "create"

    def retarget(hits: Iterable[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
        for h in hits:
            h["_index"] = target_index
            if op_type is not None:
                h["_op_type"] = op_type
            if "fields" in h:
                h.update(h.pop("fields"))
            yield h

    kw: Dict[str, Any] = {"stats_only": True}
    kw.update(a.get("bulk_kwargs") or {})
    return bulk(target_client, retarget(docs), chunk_size=a.get("chunk_size", 500), **kw)


def _async(name: str) -> Callable[..., Any]:
    def helper(client: Any, *args: Any, **kwargs: Any) -> Any:
        return _by_client(name, client)(client, *args, **kwargs)
    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = ("The peer's own %s (that of client's peer): libesbulk has no "
                      "asyncio interface." % name)
    return helper


async_bulk = _async("async_bulk")
async_streaming_bulk = _async("async_streaming_bulk")
async_scan = _async("async_scan")
async_reindex = _async("async_reindex")

# the signatures help() and inspect show: the primary peer's
for _f in (streaming_bulk, bulk, parallel_bulk):
    _f.__signature__ = _signature(_peers.PRIMARY, _f.__name__)  # type: ignore[attr-defined]
for _name in ("scan", "reindex", "async_bulk", "async_streaming_bulk", "async_scan",
              "async_reindex"):
    _pf = getattr(_peers.module(_peers.PRIMARY), _name, None)
    if _pf is not None:
        globals()[_name].__signature__ = inspect.signature(_pf)
del _f, _name, _pf

errors = _errors  # as the peers' helpers.errors: BulkIndexError, ScanError

__all__ = list(dict.fromkeys(
    ["bulk", "streaming_bulk", "parallel_bulk", "expand_action", "BulkIndexError",
     "ScanError", "BULK_FLUSH", "scan", "reindex", "async_bulk", "async_streaming_bulk",
     "async_scan", "async_reindex", "client_conf"] +
    [n for m in _peers.helpers_modules() for n in getattr(m, "__all__", ())]))
