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
import base64
import collections
import enum
import inspect
import itertools
import json
import operator
import queue
import threading
import time
from typing import (Any, Callable, Deque, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Tuple, Union)

from . import _clib, _peers
from ._clib import lib
from ._actions import _IGNORED_OPTS, _SOURCE_FILTER_MSG
from ._conf import _aws_keys, conf_key, conf_value
from ._indexer import Indexer, _utf8
from ._json import _dumps, encode_body
from ._result import Result, _make_result
from . import errors as _errors
from .errors import ConfigError, TransportError


_META = ("_id", "_index", "_if_seq_no", "_if_primary_term", "_parent", "_percolate",
         "_retry_on_conflict", "_routing", "_timestamp", "_version", "_version_type",
         "if_seq_no", "if_primary_term", "parent", "pipeline", "retry_on_conflict", "routing",
         "version", "version_type")
# elasticsearch-py's: _type too (in its order: after _timestamp)
_META_ES = _META[:9] + ("_type",) + _META[9:]
_UNDERSCORED = {"_if_seq_no", "_if_primary_term", "_parent", "_retry_on_conflict", "_routing",
                "_version", "_version_type"}
# Documents handed to the library without their result yet: at least
# IN_FLIGHT_DOCS, and as many as keep every node's max.inflight.per.node
# requests busy with more queued on each destination (_window), up to
# MAX_AHEAD_DOCS (the actions of the chunks not yielded yet are held).
HELPERS_MAX_DOC_BYTES = 100 * 1024 * 1024  # the helpers' max.doc.bytes
IN_FLIGHT_DOCS = 10000
MAX_AHEAD_DOCS = 100000


def _expand(data: Any, flavour: Optional[str]) -> Tuple[Any, Any]:
    """expand_action as flavour's peer does it (see expand_action)."""
    es = flavour == _peers.ELASTICSEARCH
    if isinstance(data, (str, bytes)):
        if es:  # elasticsearch-py: a dict action line, the document as bytes
            return {"index": {}}, data.encode("utf-8") if isinstance(data, str) else data
        return '{"index":{}}', data  # opensearch-py: both as they are sent
    if not isinstance(data, Mapping):  # None too: an action, not a pause
        raise TypeError("esbulk: an action must be a dict (or a JSON str), not %r" % (data,))
    data = dict(data)
    op_type = data.pop("_op_type", "index")
    meta: Dict[str, Any] = {}
    if op_type == "update" and "_source" in data and not isinstance(data["_source"], Mapping):
        meta["_source"] = data.pop("_source")
    for key in (_META_ES if es else _META):
        if key in data:
            meta[key[1:] if key in _UNDERSCORED else key] = data.pop(key)
    if op_type == "delete":
        return {op_type: meta}, None
    return {op_type: meta}, data.get("_source", data)


def expand_action(data: Any) -> Tuple[Any, Any]:
    """As the installed peer's expand_action (opensearch-py's when it is
    installed, else elasticsearch-py's): an action dict (or a JSON string)
    -> (action line {op: meta}, the document or None for a delete).

    The peers differ: for a string opensearch-py gives ('{"index":{}}',
    the string), elasticsearch-py ({"index": {}}, the string's UTF-8
    bytes); elasticsearch-py takes "_type" as a meta key (the server refuses
    it), opensearch-py leaves it in the document. The helpers, given this
    function (their default), do what the peer of the client they were
    given does."""
    return _expand(data, _peers.PRIMARY)


def _expand_for(flavour: Optional[str]) -> Callable[[Any], Tuple[Any, Any]]:
    return lambda data: _expand(data, flavour)


def _auth_from_header(value: str) -> Dict[str, str]:
    scheme, _, cred = value.partition(" ")
    scheme = scheme.lower()
    if scheme == "basic":
        user, _, pw = base64.b64decode(cred).decode("utf-8").partition(":")
        return {"auth.username": user, "auth.password": pw}
    if scheme == "apikey":
        return {"auth.api_key": cred}
    if scheme == "bearer":
        return {"auth.bearer": cred}
    return {}


# Headers of a client that are not the user's to pass on: the credentials
# (read apart above), the client's own defaults (its user agent, content
# type, accept), and those the library sets itself (esbulk-config(7),
# http.headers), lower-case as they are gathered.
_CLIENT_HEADERS = frozenset((
    "authorization", "user-agent", "accept", "content-type", "accept-encoding",
    "content-encoding", "content-length", "transfer-encoding", "host", "connection",
    "keep-alive", "expect", "te", "trailer", "upgrade", "proxy-connection"))


def client_conf(client: Any) -> Dict[str, str]:
    """libesbulk configuration from an opensearch-py / elasticsearch-py client
    (urls, credentials, TLS, the headers it was given), or from a URL / list
    of URLs."""
    if isinstance(client, (str, bytes)):
        client = [client]
    if isinstance(client, (list, tuple)):
        return {"urls": ",".join(c.decode() if isinstance(c, bytes) else str(c)
                                 for c in client)}
    transport = getattr(client, "transport", None)
    if transport is None:
        raise TypeError("client must be an opensearch-py or elasticsearch-py client, a URL or a "
                        "list of URLs, not %r" % (type(client).__name__,))
    conf: Dict[str, str] = {}
    urls: List[str] = []
    headers: Dict[str, str] = {}
    pool = getattr(transport, "connection_pool", None)
    if pool is not None and hasattr(pool, "connections"):  # opensearch-py, elasticsearch-py < 8
        for c in pool.connections:
            urls.append(c.host + (getattr(c, "url_prefix", "") or ""))
            # RequestsHttpConnection keeps them on its requests session
            session = getattr(c, "session", None)
            auth = getattr(c, "http_auth", None) or getattr(session, "auth", None)
            if isinstance(auth, (tuple, list)) and len(auth) == 2:
                conf["auth.username"], conf["auth.password"] = str(auth[0]), str(auth[1])
            elif isinstance(auth, str) and ":" in auth:
                u, _, p = auth.partition(":")
                conf["auth.username"], conf["auth.password"] = u, p
            elif auth is not None and (aws := _aws_conf(auth)) is not None:
                conf.update(aws)  # the library signs each request itself
                # a managed domain answers at one endpoint; its nodes'
                # addresses are private
                conf["topology.discovery"] = "false"
            elif auth is not None:  # another requests auth object, a callable
                raise TypeError("esbulk.helpers: the client's http_auth (%s) cannot be used by "
                                "libesbulk, which sends basic, API key, bearer or AWS SigV4 "
                                "credentials only" % (type(auth).__name__,))
            for k, v in (getattr(c, "headers", None) or getattr(session, "headers", None)
                         or {}).items():
                headers[k.lower()] = v
        kw = getattr(transport, "kwargs", {}) or {}
        if isinstance(kw.get("timeout"), (int, float)) and kw["timeout"] > 0:
            # the client's request timeout, when one was given (its default,
            # 10 s, is not the library's 30 s: that one stays)
            conf["request.timeout.ms"] = str(max(1, min(int(kw["timeout"] * 1000), 3600000)))
        if kw.get("verify_certs") is False:
            conf["tls.insecure"] = "true"
        for src, dst in (("ca_certs", "tls.ca.file"), ("client_cert", "tls.cert.file"),
                         ("client_key", "tls.key.file")):
            if kw.get(src):
                conf[dst] = str(kw[src])
    node_pool = getattr(transport, "node_pool", None)
    if not urls and node_pool is not None:  # elasticsearch-py 8+ (elastic-transport)
        for node in node_pool.all():
            urls.append(str(node.base_url))
            cfg = getattr(node, "config", None)
            if cfg is not None and getattr(cfg, "verify_certs", True) is False:
                conf["tls.insecure"] = "true"
            if cfg is not None and getattr(cfg, "ca_certs", None):
                conf["tls.ca.file"] = str(cfg.ca_certs)
        for k, v in (getattr(client, "_headers", None) or {}).items():
            headers[k.lower()] = v
    if not urls:
        raise TypeError("esbulk.helpers: cannot read the hosts of %r" % (client,))
    _pass_headers(conf, headers)
    conf["urls"] = ",".join(urls)
    return conf


_AUTH_KEYS = ("auth.username", "auth.password", "auth.api_key", "auth.bearer",
              "auth.aws.region", "auth.aws.service", "auth.aws.access_key_id",
              "auth.aws.secret_access_key", "auth.aws.session_token")


def _aws_signer(auth: Any) -> Any:
    """opensearch-py's AWS SigV4 signer (RequestsAWSV4SignerAuth,
    AWSV4SignerAuth, Urllib3AWSV4SignerAuth: its .signer), or anything with
    .credentials and .region; else None. Its credentials are not read."""
    signer = getattr(auth, "signer", auth)
    if getattr(signer, "credentials", None) is None or not getattr(signer, "region", None):
        return None
    return signer


def _refreshable_creds(auth: Any) -> Any:
    """The credentials of an AWS signer when they refresh themselves
    (botocore's RefreshableCredentials: roles, SSO), else None."""
    creds = getattr(_aws_signer(auth), "credentials", None)
    return creds if callable(getattr(creds, "get_frozen_credentials", None)) else None


def _client_refreshable_creds(client: Any) -> Any:
    """_refreshable_creds of the AWS signer of client's connections, if any."""
    pool = getattr(getattr(client, "transport", None), "connection_pool", None)
    for c in getattr(pool, "connections", None) or ():
        auth = getattr(c, "http_auth", None) or getattr(getattr(c, "session", None), "auth", None)
        if _aws_signer(auth) is not None:
            return _refreshable_creds(auth)
    return None


def _aws_conf(auth: Any) -> Optional[Dict[str, str]]:
    """The auth.aws.* keys of an AWS signer (_aws_signer), or None.
    Refreshable credentials (botocore's, boto3's) are read once, frozen
    (_aws_keys), as opensearch-py reads them for each request: a helper call
    signs with the credentials of its start, and the Indexer reads them again
    while it runs (aws_credentials)."""
    signer = _aws_signer(auth)
    if signer is None:
        return None
    try:
        keys = _aws_keys(signer.credentials)
    except ConfigError:
        return None  # no keys in them: not credentials the library can sign with
    return dict({"auth.aws.region": str(signer.region),
                 "auth.aws.service": str(getattr(signer, "service", None) or "es")}, **keys)


def _set_auth(conf: Dict[str, Any], auth: Dict[str, str]) -> None:
    """auth (auth.* keys) in place of the credentials conf has, if any."""
    if auth:
        for k in _AUTH_KEYS:
            conf.pop(k, None)
        conf.update(auth)


def _pass_headers(conf: Dict[str, Any], headers: Mapping[str, Any],
                  override: bool = False) -> None:
    """Puts the headers a client, or a helper call's headers=, would send
    into conf: credentials in Authorization as the auth.* keys (a client's
    only when it had no user; a call's, override, in place of the
    client's), the others (X-Opaque-Id, securitytenant, ...) in
    http.headers, over the same names there; the client's own defaults
    (_CLIENT_HEADERS) are left out. Before, all but Authorization were
    dropped, and the requests went without them."""
    h = {k.lower(): v for k, v in headers.items() if v is not None}
    if "authorization" in h and (override or "auth.username" not in conf):
        _set_auth(conf, _auth_from_header(str(h["authorization"])))
    merged: Dict[str, str] = {}
    for line in str(conf.get("http.headers") or "").split("\n"):
        name, colon, value = line.partition(":")
        if colon:
            merged[name.strip().lower()] = value.strip()
    merged.update((k, str(v)) for k, v in h.items() if k not in _CLIENT_HEADERS)
    if merged:
        conf["http.headers"] = "\n".join("%s: %s" % kv for kv in merged.items())


_META_SET = frozenset(_META)
_META_SET_ES = frozenset(_META_ES)
_FAST_META = frozenset(("_index", "_id"))


def _shape(keys: Tuple[Any, ...], meta_set: frozenset = _META_SET) -> Any:
    """What streaming_bulk's inline expand_action needs of an action dict
    with these keys: False when it has a meta key other than _index / _id
    (expand_action itself is called), else (mask: 1 _index, 2 _id; has
    _op_type; has _source; the keys that are not the body's)."""
    ks = meta_set.intersection(keys)
    if not ks <= _FAST_META:
        return False
    mask = (1 if "_index" in ks else 0) | (2 if "_id" in ks else 0)
    return mask, "_op_type" in keys, "_source" in keys, frozenset(ks | {"_op_type"})


class _Chunk:
    """One chunk of actions, from its submission to its last yield.

    out[k]: the outcome of action k once its result came: True for an indexed
    document with a 2xx status (its item's fields in the columns cols, kept
    only when the items are yielded: no per-document object is held, so the
    garbage collector has nothing more to walk), else its Result (bad counts
    those). metas[k]:
    the action's meta dict, or for an action with no meta key but _index /
    _id (the common case: no dict made) a mask of which it had (1 _index, 2
    _id); idxs / ids: the index it goes to and its raw _id."""
    __slots__ = ("no", "n", "left", "bad", "out", "op_types", "metas", "datas", "idxs", "ids",
                 "actions", "cols", "refused")

    def __init__(self, no: int, op_types: List[str], metas: List[Any], datas: List[Any],
                 idxs: List[Any], ids: List[Any], actions: Optional[List[Any]],
                 counts: bool = False) -> None:
        self.no = no
        self.n = self.left = len(op_types)
        self.bad = 0
        # bulk()'s (counts): True unless the sink stores a Result, so that a
        # batch all indexed is only counted
        self.out: List[Any] = [True if counts else None] * self.n
        self.op_types, self.metas, self.datas = op_types, metas, datas
        self.idxs, self.ids = idxs, ids
        self.actions = actions  # the caller's own action objects (yield_action)
        # _index, _id, _version, result, _seq_no, _primary_term, status
        self.cols: Optional[List[List[Any]]] = None
        # the error of a chunk the server would refuse whole (submit)
        self.refused: Optional[BaseException] = None

    def item(self, k: int) -> Dict[str, Any]:
        """The item of indexed document k, from the columns."""
        ix_, id_, vr, rs, sq, pt, st = (col[k] for col in self.cols)  # type: ignore[union-attr]
        return {"_index": ix_, "_id": id_, "_version": vr, "result": rs, "_seq_no": sq,
                "_primary_term": pt, "status": st}

    def items(self) -> Iterator[Tuple[bool, Dict[str, Any]]]:
        """(True, {op_type: item}) of every action, all indexed."""
        for op, ix_, id_, vr, rs, sq, pt, st in zip(self.op_types, *self.cols):  # type: ignore
            yield True, {op: {"_index": ix_, "_id": id_, "_version": vr, "result": rs,
                              "_seq_no": sq, "_primary_term": pt, "status": st}}

    def meta(self, k: int) -> Dict[str, Any]:
        """Action k's meta, as expand_action gives it."""
        m = self.metas[k]
        if type(m) is dict:
            return m  # type: ignore[no-any-return]
        meta: Dict[str, Any] = {}
        if m & 2:  # in expand_action's key order: _id, then _index
            meta["_id"] = self.ids[k]
        if m & 1:
            meta["_index"] = self.idxs[k]
        return meta


_OPTS = {"if_seq_no", "if_primary_term", "version", "version_type", "pipeline",
         "retry_on_conflict", "require_alias"}
# What an action line may hold (the server's bulk parser). Any other key
# (a meta key expand_action takes, as opensearch-py's, that the server no
# longer knows: "parent", "_percolate", "_timestamp"; or what an
# expand_action_callback put there: "_routing", "_version"...) makes the
# server refuse the whole request ("Action/metadata line [1] contains an
# unknown parameter [parent]"). Dropped, a parent's child went to another
# shard than the one asked for, a routing or a version was lost: such an
# action is a 400 item.
_ACTION_LINE_KEYS = frozenset(("_index", "_id", "routing", "op_type", "_source")) | _OPTS


def _window(ix: Indexer, chunk_size: int, inflight: int) -> Tuple[int, bool]:
    """(documents that may be in the library, handed over and without their
    result yet; whether the nodes were known). The library sends a node its
    next request the moment one comes back only if it holds, besides every
    node's max.inflight.per.node requests, a full request's worth queued on
    each destination (node, shard or index queue); a chunk is spread over
    all of them, and the nodes do not answer in step, so twice that is
    queued. With fewer (10,000 documents in chunks of 5,000 on 3 nodes),
    each node had one request in flight at a time and waited for the helper
    between requests."""
    nodes = dests = 0
    try:
        st = ix.stats()
        nodes = sum(1 for nd in st.get("nodes") or () if not nd.get("seed"))
        dests = int(st.get("destinations") or 0)
    except Exception:  # pragma: no cover - statistics are best effort
        pass
    size = max(1, chunk_size)
    need = (inflight * max(1, nodes) + 2 * max(1, nodes, dests)) * size
    return max(IN_FLIGHT_DOCS, min(need, MAX_AHEAD_DOCS)), nodes > 0


def _indexer_for(client: Any, chunk_size: int, max_chunk_bytes: int, max_retries: int,
                 kwargs: Dict[str, Any], meta: bool = True
                 ) -> Tuple[Indexer, Optional[str], int]:
    conf: Dict[str, Any] = dict(client_conf(client))
    # what opensearch-py takes per call and sends as headers (client.bulk's
    # headers=, opaque_id=, http_auth=, api_key=): with the client's, the
    # call's winning (they raised TypeError, "unsupported argument")
    headers = dict(kwargs.pop("headers", None) or {})
    if kwargs.get("opaque_id") is not None:
        headers["x-opaque-id"] = kwargs["opaque_id"]
    kwargs.pop("opaque_id", None)
    http_auth, api_key = kwargs.pop("http_auth", None), kwargs.pop("api_key", None)
    if http_auth is not None and api_key is not None:
        raise ValueError("Only one of 'http_auth' and 'api_key' may be passed at a time")
    # refreshable AWS credentials are read again while the call runs
    # (Indexer's aws_credentials), so that a long run outlives them
    aws_creds = (_client_refreshable_creds(client)
                 if not isinstance(client, (str, bytes, list, tuple)) else None)
    aws = _aws_conf(http_auth) if http_auth is not None else None
    if aws is not None:
        _set_auth(conf, aws)  # a call's signer, in place of the client's
        conf["topology.discovery"] = "false"
        aws_creds = _refreshable_creds(http_auth)
        http_auth = None
    elif http_auth is not None or api_key is not None:
        aws_creds = None  # the call's credentials replace the client's signer
    for cred, scheme in ((http_auth, "Basic"), (api_key, "ApiKey")):
        if cred is not None:
            # (user, password) / (id, key) or "user:password" / "id:key";
            # else the base64 of it, as opensearch-py sends a string
            if isinstance(cred, (tuple, list)):
                cred = ":".join(str(c) for c in cred)
            cred = str(cred)
            if ":" in cred:
                cred = base64.b64encode(cred.encode("utf-8")).decode("ascii")
            headers["authorization"] = "%s %s" % (scheme, cred)
    _pass_headers(conf, headers, override=True)
    # the items yielded carry _seq_no, _primary_term and _version, as
    # opensearch-py's do; bulk(), which only counts successes, does not ask
    # the server for them (they cost it some 3% of its indexing rate)
    conf["result.meta"] = "true" if meta else "false"
    conf["flush.docs"] = max(1, min(int(chunk_size), 1000000))
    conf["flush.bytes"] = max(1024, min(int(max_chunk_bytes), 1073741824))
    if max_retries > 10:
        conf["retry.max"] = min(int(max_retries), 1000)
    # as large a document as the server takes by default (http.max_content_length,
    # 100mb), as opensearch-py sends it; the library's own default is 10 MiB
    conf["max.doc.bytes"] = HELPERS_MAX_DOC_BYTES
    index = kwargs.pop("index", None)
    if kwargs.get("pipeline") is not None:
        conf["bulk.pipeline"] = kwargs.pop("pipeline")
    kwargs.pop("pipeline", None)
    refresh = kwargs.pop("refresh", None)
    if refresh is not None:
        conf["bulk.refresh"] = ("true" if refresh is True else
                                "false" if refresh is False else str(refresh))
    for k in ("request_timeout", "timeout"):
        t = kwargs.pop(k, None)
        if t is not None:
            if isinstance(t, str):  # "30s", "1m": the server's time units
                num = t.strip().rstrip("abcdefghijklmnopqrstuvwxyz")
                mult = _TIME_UNITS.get(t.strip()[len(num):])
                try:
                    if mult is None:
                        raise ValueError
                    t = float(num) * mult
                except ValueError:
                    raise ValueError("esbulk.helpers: %s=%r is not a time (a number of seconds, "
                                     "or a number with d, h, m, s, ms, micros or nanos)"
                                     % (k, t)) from None
            # (at most the library's longest, an hour)
            conf["request.timeout.ms"] = max(1, min(int(float(t) * 1000), 3600000))
    conf.update(kwargs.pop("esbulk_conf", None) or {})
    for k, v in conf.items():
        if conf_key(k) in _UNUSABLE_KEYS and v is not None and \
                conf_value(v) != _UNUSABLE_KEYS[conf_key(k)]:
            raise ValueError("esbulk.helpers: esbulk_conf %s=%r cannot be used: the helpers "
                             "need a result for every action (to yield or count it)"
                             % (k, v))
    if kwargs:
        raise TypeError("esbulk.helpers: unsupported argument(s) %s" % ", ".join(sorted(kwargs)))
    inflight = 2  # max.inflight.per.node's default
    for k, v in conf.items():
        if conf_key(k) == "max.inflight.per.node" and v is not None:
            inflight = max(1, int(v))
    # block: a full buffer (buffer.max.docs / .bytes, e.g. large documents in
    # the window's chunks) waits for room instead of raising QueueFullError
    if "auth.aws.region" not in conf:
        aws_creds = None  # esbulk_conf= or headers= chose other credentials
    return Indexer(block=True, aws_credentials=aws_creds, **conf), index, inflight


# the server's time units, in seconds ("" : seconds)
_TIME_UNITS = {"": 1.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001,
               "micros": 1e-6, "nanos": 1e-9}


# libesbulk keys the helpers cannot work with, and the only value they take
_UNUSABLE_KEYS = {"result.failures_only": "false"}


def _request_failure(r: Result, op_type: str, meta: Dict[str, Any], data: Any,
                     raise_on_exception: bool, ignore_status: Tuple[Any, ...]
                     ) -> Tuple[bool, Dict[str, Any]]:
    """(raised?, info) for a document that was not delivered at all."""
    status = r.status if r.status else "N/A"
    msg = "%s: %s" % (r.error_name, r.reason) if r.reason else r.error_name
    exc = _errors.transport_error(status)(msg, status, r.error)
    if raise_on_exception and status not in ignore_status:
        raise exc
    info: Dict[str, Any] = {"error": msg, "status": status, "exception": exc}
    if op_type != "delete":
        info["data"] = data
    info.update(meta)
    return False, info


def _chunk_outcomes(chunk: _Chunk, raise_on_error: bool, raise_on_exception: bool,
                    ignore_status: Tuple[Any, ...]
                    ) -> Iterator[Tuple[int, bool, Dict[str, Any]]]:
    """What opensearch-py's _process_bulk_chunk yields (and raises) for a
    chunk, each with the position of its action in the chunk."""
    errors: List[Dict[str, Any]] = []
    op_types, datas = chunk.op_types, chunk.datas
    for k, r in enumerate(chunk.out):
        if r is True:  # indexed, 2xx (bulk() counts them: no item)
            yield k, True, (None if chunk.cols is None  # type: ignore[misc]
                            else {op_types[k]: chunk.item(k)})
            continue
        if r is None:  # pragma: no cover - a chunk is read only once it is complete
            raise RuntimeError("esbulk: a result is missing")
        op_type = op_types[k]
        item_answer = r.ok or r.error == _clib.ERR_ITEM or (
            r.status and r.error == -20) or (  # retries exhausted on an item status (429)
            r.error in _REFUSED_AT_ADD)  # the helper's own 400 item (submit's refuse())
        if not item_answer:
            _, info = _request_failure(r, op_type, chunk.meta(k), datas[k], raise_on_exception,
                                       ignore_status)
            if raise_on_error and info["status"] not in ignore_status:
                errors.append({op_type: info})
            elif not errors:
                yield k, False, {op_type: info}
            continue
        item = r.item()
        status = item.get("status", 500)
        ok = 200 <= status < 300
        if not ok and raise_on_error and status not in ignore_status:
            if op_type != "delete":
                item["data"] = datas[k]
            errors.append({op_type: item})
        if ok or not errors:
            yield k, ok, {op_type: item}
    if errors:
        raise _errors.bulk_index_error()("%i document(s) failed to index." % len(errors),
                                         errors)  # type: ignore[call-arg]


def _sink_for(live: Dict[int, _Chunk], shift: int, counts: bool) -> Callable[[Any], None]:
    """The Indexer's sink: each pulled batch's results into their chunks
    (live: chunk number -> chunk; a document's opaque is its chunk's number
    << shift | its position). An indexed document with a 2xx status (the
    common case) is marked True, its item's fields stored in the chunk's
    columns (unless counts: bulk() only counts them); any other keeps its
    Result."""
    mask = (1 << shift) - 1

    def sink(b: Any) -> None:
        cols = b.cols
        if counts:
            sts = cols[3]
            if not any(cols[0]) and 200 <= min(sts) and max(sts) < 300:
                # all indexed with a 2xx (the common batch): their chunks'
                # out is True already, only how many came is counted (C loops)
                for no, got in collections.Counter(map(
                        operator.rshift, b.opaques, itertools.repeat(shift))).items():
                    live[no].left -= got
                return
        cno = -1
        c: Any = None
        out: List[Any] = []
        got = 0
        ci = cd = cv = cr = cs = cp = ct = out
        for i, (o, oc, st, vr, sq, rs, pt, ix_, id_) in enumerate(zip(
                b.opaques, cols[0], cols[3], cols[8], cols[6], cols[11], cols[7], cols[9],
                cols[10])):
            no = o >> shift
            if no != cno:
                if c is not None:
                    c.left -= got
                c = live[no]
                cno, out, got = no, c.out, 0
                if not counts:
                    if c.cols is None:
                        c.cols = [[None] * c.n for _ in range(7)]
                    ci, cd, cv, cr, cs, cp, ct = c.cols
            got += 1
            pos = o & mask
            if oc == 0 and 200 <= st < 300 and (counts or (vr >= 0 and sq >= 0 and
                                                           rs is not None)):
                out[pos] = True
                if not counts:
                    ci[pos] = ix_
                    cd[pos] = id_
                    cv[pos] = vr
                    cr[pos] = rs
                    cs[pos] = sq
                    cp[pos] = pt
                    ct[pos] = st
            else:
                out[pos] = _make_result(tuple(col[i] for col in cols), b.errors.get(i), None,
                                        None)
                c.bad += 1
        if c is not None:
            c.left -= got
    return sink


class _Reader:
    """flush_after_seconds: the actions are read by a thread of their own into
    a bounded queue, so that the helper can send a partial chunk, and yield
    the results that came, while the generator is waiting for its next
    action (as elasticsearch-py 9's streaming_bulk does)."""

    _END = object()

    def __init__(self, actions: Iterable[Any], depth: int) -> None:
        self.q: "queue.Queue[Tuple[Any, Any]]" = queue.Queue(maxsize=max(16, depth))
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, args=(iter(actions),),
                                  name="esbulk-actions", daemon=True)
        self.t.start()

    def _put(self, v: Tuple[Any, Any]) -> bool:
        while not self.stop.is_set():
            try:
                self.q.put(v, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, it: Iterator[Any]) -> None:
        try:
            for a in it:
                if not self._put((a, None)):
                    return
        except BaseException as e:  # handed to the consumer's thread, raised there
            self._put((self._END, e))
            return
        self._put((self._END, None))

    def get(self, timeout: float) -> Tuple[Any, Any]:
        """(action, None), (_END, exception or None), or raises queue.Empty."""
        return self.q.get(timeout=timeout)

    def close(self) -> None:
        self.stop.set()
        self.t.join(1.0)  # a generator blocked in its own wait is left behind (daemon)


def _streaming_bulk(client: Any, actions: Iterable[Any], chunk_size: int = 500,
                    max_chunk_bytes: int = 100 * 1024 * 1024, raise_on_error: bool = True,
                    expand_action_callback: Callable[[Any], Tuple[Any, Any]] = expand_action,
                    raise_on_exception: bool = True, max_retries: int = 0,
                    initial_backoff: Union[int, float] = 2, max_backoff: Union[int, float] = 600,
                    yield_ok: bool = True, ignore_status: Any = (), *args: Any,
                    flush_after_seconds: Optional[float] = None,
                    retry_on_status: Any = (429,), span_name: Optional[str] = None,
                    **kwargs: Any) -> Iterator[Any]:
    """streaming_bulk, its arguments bound by name (see streaming_bulk)."""
    flavour = _peers.of_client(client)
    if args:
        raise TypeError("esbulk.helpers.streaming_bulk: extra positional arguments %r" % (args,))
    if not isinstance(ignore_status, (list, tuple)):
        ignore_status = (ignore_status,)
    ignore_status = tuple(ignore_status)
    kwargs = dict(kwargs)
    yield_action = bool(kwargs.pop("yield_action", False))
    # bulk()'s: a chunk with no failure is yielded as its count, and an
    # indexed document's item is not made (bulk() only counts them)
    counts = bool(kwargs.pop("_esbulk_counts", False))
    flush_after = flush_after_seconds
    # elasticsearch-py's retry_on_status: the items refused with one of them
    # are retried, up to max_retries times. libesbulk retries 429 and 503
    # items itself, whatever max_retries; others it cannot retry, which is
    # said, rather than not done (with max_retries=0 nothing is retried:
    # nothing to say)
    if isinstance(retry_on_status, int):
        retry_on_status = (retry_on_status,)
    beyond = sorted(set(retry_on_status) - {429, 503})
    if beyond and max_retries:
        raise ValueError("esbulk.helpers: retry_on_status %r: libesbulk retries the items "
                         "refused with 429 or 503 itself, and cannot retry %s" %
                         (tuple(retry_on_status), ", ".join(map(str, beyond))))
    if flush_after is not None and not float(flush_after) > 0:
        raise ValueError("flush_after_seconds must be > 0, not %r" % (flush_after,))
    # the most actions a chunk holds: chunk_size, or as opensearch-py's
    # chunker, no limit but max_chunk_bytes when it is below 1 (each action
    # counts 32 bytes at least, below)
    if chunk_size is None:  # as opensearch-py's chunker: no limit
        chunk_size = 0
    per_chunk = int(chunk_size) if chunk_size >= 1 else max(1, int(max_chunk_bytes) // 32 + 1)
    ix, default_index, inflight = _indexer_for(client, per_chunk, max_chunk_bytes, max_retries,
                                               kwargs, meta=not counts)
    ahead, known = _window(ix, per_chunk, inflight)
    ahead_at = time.monotonic()
    chunks: Deque[_Chunk] = collections.deque()
    live: Dict[int, _Chunk] = {}
    # a document's opaque: its chunk's number << shift | its position
    shift = per_chunk.bit_length()
    ix._sink = _sink_for(live, shift, counts)
    next_chunk = iter(range(1 << 62)).__next__
    clean = False
    taken = 0  # actions handed to submit() so far
    reader: Optional[_Reader] = None
    # the default expand_action (ours, or a peer's own) is done inline for a
    # plain dict (the same result, without its copy of the action), as the
    # client's peer does it
    fast, exp_flavour = _default_expand(expand_action_callback, flavour)
    if fast:
        expand_action_callback = _expand_for(exp_flavour)
    meta_set = _META_SET_ES if exp_flavour == _peers.ELASTICSEARCH else _META_SET

    def ready_heads() -> Iterator[Any]:
        while chunks and chunks[0].left == 0:
            c = chunks.popleft()
            del live[c.no]
            if c.refused is not None:
                for k, ok, info in _refused_outcomes(c, raise_on_error, raise_on_exception,
                                                     ignore_status):
                    yield (ok, info) if c.actions is None else (ok, info, c.actions[k])
                continue
            if c.bad == 0 and c.actions is None:
                if counts:
                    yield c.n
                elif yield_ok:
                    yield from c.items()
                continue
            for k, ok, info in _chunk_outcomes(c, raise_on_error, raise_on_exception,
                                               ignore_status):
                if yield_ok or not ok:
                    yield (ok, info) if c.actions is None else (ok, info, c.actions[k])

    def submit(op_types: List[str], metas: List[Any], datas: List[Any], idxs: List[Any],
               ids: List[Any], bodies: List[Optional[bytes]], acts: Optional[List[Any]],
               slow: bool) -> None:
        nonlocal taken
        n = len(op_types)
        first = taken  # the position of the chunk's first action in the stream
        try:
            opcs = list(map(_clib.OPS.__getitem__, op_types))
        except KeyError:
            opcs = []
        if len(opcs) != n:
            for k in range(n):  # the first bad one, in order
                if op_types[k] not in _clib.OPS:
                    raise ValueError("action %d: unknown _op_type %r" % (first + k, op_types[k]))
        if None in idxs:
            # An action with no _index and no index=: the server refuses the
            # whole request ("index is missing"), so the peer's chunk fails
            # with a 400 TransportError. So does this chunk, sent to no one.
            c = _Chunk(next_chunk(), op_types, metas, datas, idxs, ids, acts, counts)
            c.out = [None] * n
            c.left = 0
            c.refused = _errors.make_request_error(
                flavour, "action_request_validation_exception", "Validation Failed: " + "".join(
                    "%d: index is missing;" % (j + 1) for j in range(sum(i is None for i in idxs))))
            chunks.append(c)
            live[c.no] = c
            taken += n
            return
        distinct = set(idxs)
        ib: Union[bytes, List[bytes]]
        try:  # "": refused below, a failed item of its own (never sent)
            if len(distinct) == 1:
                ib = ix._index_bytes(idxs[0]) if idxs[0] != "" else b""
            else:
                bmap = {i: ix._index_bytes(i) if i != "" else b"" for i in distinct}
                ib = list(map(bmap.__getitem__, idxs))
        except _errors.InvalidDocumentError as e:
            k = next(k for k, i in enumerate(idxs) if not isinstance(i, str) or not i)
            raise ValueError("action %d: %s" % (first + k, e)) from None
        c = _Chunk(next_chunk(), op_types, metas, datas, idxs, ids, acts, counts)
        routings: Optional[List[Any]] = None
        optl: Optional[List[Optional[int]]] = None
        # documents refused before the library saw them (options that do not
        # fit): position -> (esbulk_err_t, why)
        pre: Dict[int, Tuple[Any, ...]] = {}
        try:
            if slow:  # some actions had other meta keys: routing, options
                routings, optl = [], []
                for k, m in enumerate(metas):
                    if type(m) is dict:
                        if "_source" in m and op_types[k] == "update":
                            why = _SOURCE_FILTER_MSG % (m["_source"],)
                            raise ValueError("action %d: %s" % (first + k, why))
                        r = m.get("routing")
                        routings.append(_utf8(r))
                        # what the server does not know on an action line (an
                        # expand_action_callback's "_routing", "_version"...):
                        # refused, not dropped (a routing or a version lost)
                        unknown = [u for u in m if u not in _ACTION_LINE_KEYS]
                        if unknown:
                            pre[k] = (_clib.ERR_INVALID_ARG, "Action/metadata line [1] contains "
                                      "an unknown parameter [%s]" % unknown[0],
                                      "illegal_argument_exception")
                        ot = m.get("op_type")
                        if ot is not None and ot != op_types[k]:
                            if op_types[k] == "index" and ot == "create":
                                op_types[k] = "create"  # as the server takes it
                                opcs[k] = _clib.OPS["create"]
                            else:
                                pre.setdefault(k, (_clib.ERR_INVALID_ARG, "op_type [%s] does "
                                                   "not fit the action [%s]"
                                                   % (ot, op_types[k]),
                                                   "illegal_argument_exception"))
                        o = {k2: m[k2] for k2 in _OPTS if m.get(k2) is not None and
                             k2 not in _IGNORED_OPTS[op_types[k]]}
                        if o:
                            for k2 in _OPTS:
                                o.setdefault(k2, None)
                            try:
                                optl.append(ix._make_opts(**o))
                            except (_errors.InvalidDocumentError, TypeError, ValueError) as e:
                                optl.append(None)
                                pre.setdefault(k, (getattr(e, "code", 0) or
                                                   _clib.ERR_INVALID_ARG,
                                                   getattr(e, "reason", "") or str(e)))
                        else:
                            optl.append(None)
                    else:
                        routings.append(None)
                        optl.append(None)
                if not any(optl):
                    optl = None
            if "" in distinct:  # as the server refuses it, that document alone
                for k, i in enumerate(idxs):
                    if i == "":
                        pre.setdefault(k, (_clib.ERR_INVALID_ARG, "Invalid index name [], must "
                                           "not be empty", "invalid_index_name_exception"))
            eids = _encode_ids(ids)  # may raise (a lone surrogate): before c is counted
            chunks.append(c)
            live[c.no] = c
            taken += n
            base = c.no << shift
            if not pre:
                try:  # the common case: the whole chunk in one call
                    ix._add_batch(opcs, ib, eids, routings, bodies, optl,
                                  range(base, base + n))  # type: ignore[arg-type]
                    return
                except _errors.InvalidDocumentError as e:
                    refuse(c, e.accepted, e.code, e.reason or str(e))
                    pos = e.accepted + 1
            else:
                pos = 0
            # One document refused at add time (not JSON, over max.doc.bytes,
            # bad UTF-8, options that do not fit): a failed item of its own,
            # as the server's refusal would be, and the rest of the chunk is
            # added after it.
            while pos < n:
                if pos in pre:
                    refuse(c, pos, *pre[pos])
                    pos += 1
                    continue
                end = min([k for k in pre if k > pos] or [n])
                sl = slice(pos, end)
                try:
                    ix._add_batch(opcs[sl], ib if isinstance(ib, bytes) else ib[sl],
                                  None if eids is None else eids[sl],
                                  None if routings is None else routings[sl], bodies[sl],
                                  None if optl is None else optl[sl],
                                  range(base + pos, base + end))  # type: ignore[arg-type]
                    pos = end
                except _errors.InvalidDocumentError as e:
                    refuse(c, pos + e.accepted, e.code, e.reason or str(e))
                    pos += e.accepted + 1
        finally:
            for o2 in optl or ():
                if o2:
                    lib.esbulk_docopts_destroy(o2)

    def refuse(c: _Chunk, k: int, code: int, why: str, etype: Optional[str] = None) -> None:
        """Action k of chunk c, refused at add time: its failed item (status
        400, as the server's answer to such a document)."""
        etype = etype or ("mapper_parsing_exception" if code == _clib.ERR_INVALID_JSON else
                          "illegal_argument_exception")
        i = c.ids[k]
        id_ = None if i is None else i.decode("utf-8", "replace") if isinstance(
            i, (bytes, bytearray)) else str(i)
        c.out[k] = _make_result((_clib.OUTCOME_FAILED, code, _clib.OPS[c.op_types[k]], 400, 0,
                                 0, -1, -1, -1, c.idxs[k], id_, None),
                                (etype, "esbulk refused the document: %s" % (why,), None, None,
                                 None),
                                None, None)
        c.bad += 1
        c.left -= 1

    def wait_window() -> Iterator[Any]:
        """Waits while the library holds `ahead` documents without their
        result, or the chunks not yielded yet hold 1.5 times as many (the
        head chunk waits for the slowest node its documents went to; the
        later ones may complete meanwhile)."""
        nonlocal ahead, known, ahead_at
        if not known or time.monotonic() - ahead_at >= 1.0:
            # the nodes and destinations change with the topology and indices
            ahead, known = _window(ix, per_chunk, inflight)
            ahead_at = time.monotonic()
        most = max(4, (ahead + ahead // 2) // per_chunk)
        while len(chunks) >= most or len(ix) >= ahead:
            if ix.poll(0.2) == 0 and len(ix) == 0 and chunks[0].left:
                raise RuntimeError("esbulk: %d result(s) never came" %
                                   sum(c.left for c in chunks))
            yield from ready_heads()

    def drain() -> Iterator[Any]:
        """Sends what the library holds and yields every chunk's results."""
        while chunks:
            left = ix.flush(0.2)
            yield from ready_heads()
            if chunks and left == 0 and chunks[0].left:
                # never: every accepted document gets exactly one result
                raise RuntimeError("esbulk: %d result(s) never came" %
                                   sum(c.left for c in chunks))

    def source() -> Iterator[Any]:
        """The actions; _FLUSH when flush_after_seconds passed without one."""
        nonlocal reader
        if flush_after is None:
            yield from actions
            return
        reader = _Reader(actions, chunk_size)
        last = time.monotonic()
        flushed = True
        while True:
            try:
                a, exc = reader.get(0.05)
            except queue.Empty:
                if not flushed and time.monotonic() - last >= float(flush_after):
                    flushed = True
                    yield _FLUSH
                else:
                    yield _IDLE
                continue
            if a is _Reader._END:
                if exc is not None:
                    raise exc
                return
            last = time.monotonic()
            flushed = False
            yield a

    dumps = _dumps
    # a plain action dict's keys (as a tuple, in order) -> _shape's answer
    shapes: Dict[Tuple[Any, ...], Any] = {}
    in_yield = False  # inside a yield of results (see out())
    input_error: Optional[BaseException] = None
    interrupted = False

    def out(g: Iterator[Any]) -> Iterator[Any]:
        """Yields g's results, marking that an exception meanwhile is theirs
        (or the caller's, thrown in at the yield), not the actions'."""
        nonlocal in_yield
        in_yield = True
        yield from g
        in_yield = False

    try:
        try:
            op_types: List[str] = []
            metas: List[Any] = []
            datas: List[Any] = []
            idxs: List[Any] = []
            ids: List[Any] = []
            bodies: List[Optional[bytes]] = []
            acts: Optional[List[Any]] = [] if yield_action else None
            slow = False
            size = 0
            since_poll = 0
            for a in (actions if flush_after is None else source()):
                if a is _IDLE or a is _FLUSH or a is BULK_FLUSH or a is _PEER_FLUSH:
                    if a is not _IDLE and op_types:
                        # flush_after_seconds with no new action, or BULK_FLUSH
                        submit(op_types, metas, datas, idxs, ids, bodies, acts, slow)
                        op_types, metas, datas, idxs, ids, bodies = [], [], [], [], [], []
                        size, slow = 0, False
                        acts = [] if yield_action else None
                        yield from out(wait_window())
                        # sent now, not after the library's flush.interval.ms
                        ix.flush(0.001)
                    if a is BULK_FLUSH or a is _PEER_FLUSH:
                        # as elasticsearch-py's: what was read so far is sent
                        # and its results yielded before the next action is read
                        yield from out(drain())
                    ix.poll(0)
                    yield from out(ready_heads())
                    continue
                m: Any = None
                if fast and type(a) is dict:
                    keys = tuple(a)
                    sh = shapes.get(keys)
                    if sh is None:
                        if len(shapes) >= 64:
                            shapes.clear()
                        sh = shapes[keys] = _shape(keys, meta_set)
                    if sh is not False:
                        mask, has_op, has_src, drop = sh
                        op_type = a["_op_type"] if has_op else "index"
                        if not (has_op and op_type == "update" and has_src and
                                not isinstance(a["_source"], Mapping)):
                            # what expand_action gives, without copying the action
                            m = mask
                            if op_type == "delete":
                                data = None
                            elif has_src:
                                data = a["_source"]
                            else:
                                data = {k: v for k, v in a.items() if k not in drop}
                            if m:
                                ri = a["_index"] if m & 1 else None
                                id_ = a["_id"] if m & 2 else None
                                # "_index": None is the default (as the server takes it)
                                index = ri if ri is not None else default_index
                            else:
                                ri, id_, index = None, None, default_index
                if m is None:
                    action, data = expand_action_callback(a)
                    (op_type, m), = action.items() if isinstance(action, Mapping) else \
                        json.loads(action).items()
                    ri = m.get("_index")
                    id_ = m.get("_id")
                    index = ri if ri is not None else default_index
                    if not slow and not m.keys() <= _FAST_META:
                        slow = True
                if op_type == "delete" or data is None:
                    body = None
                else:
                    t = type(data)
                    body = data if t is bytes else dumps(data) if t is dict else encode_body(data)
                # the action line's and the body's bytes, as opensearch-py's
                # chunker counts them (max_chunk_bytes)
                if type(m) is dict and m.keys() - _FAST_META:
                    cur = len(json.dumps({op_type: m}, ensure_ascii=False, separators=(",", ":"),
                                         default=str).encode()) + 1
                else:
                    cur = len(op_type) + 8
                    if ri is not None:
                        cur += 9 + _jlen(ri)
                    if id_ is not None:
                        cur += 6 + _jlen(id_) + (ri is not None)
                if body is not None:
                    cur += len(body) + 1
                if op_types and (size + cur > max_chunk_bytes or len(op_types) == chunk_size):
                    submit(op_types, metas, datas, idxs, ids, bodies, acts, slow)
                    op_types, metas, datas, idxs, ids, bodies = [], [], [], [], [], []
                    size, slow = 0, False
                    acts = [] if yield_action else None
                    yield from out(wait_window())
                    ix.poll(0)
                    since_poll = 0
                    yield from out(ready_heads())
                elif since_poll >= 64:
                    since_poll = 0
                    ix.poll(0)
                    yield from out(ready_heads())
                since_poll += 1
                op_types.append(op_type)
                metas.append(m)
                datas.append(data)
                idxs.append(index)
                ids.append(id_)
                bodies.append(body)
                if acts is not None:
                    acts.append(a)
                size += cur
            if op_types:
                submit(op_types, metas, datas, idxs, ids, bodies, acts, slow)
        except Exception as e:
            if in_yield:  # raised by the results (BulkIndexError, TransportError)
                raise
            # The actions raised (the iterable, expand_action_callback, the
            # encoding, an action refused): as opensearch-py, which yielded
            # every chunk it sent before reading on, yield the results of
            # what was handed to the library, then re-raise.
            input_error = e
        yield from drain()
        clean = True
        if input_error is not None:
            raise input_error
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if reader is not None:
            reader.close()
        # Normal end: nothing is left. Stopped early (an exception, or the
        # caller stopped iterating): what was handed over is still sent,
        # waiting up to 30 s. Ctrl-C: closed at once (what was not sent yet
        # is not; what was in flight may be indexed).
        ix.close(None if clean else 0 if interrupted else 30)


# esbulk_err_t of a document refused at add time (never a delivered result's)
_REFUSED_AT_ADD = frozenset((_clib.ERR_INVALID_ARG, _clib.ERR_INVALID_UTF8,
                             _clib.ERR_DOC_TOO_LARGE, _clib.ERR_INVALID_JSON))


def _encode_ids(ids: List[Any]) -> Optional[List[Optional[bytes]]]:
    """The _ids as bytes (see _indexer._utf8: bytes as they are, str() of an
    int), None when none has one."""
    try:
        return list(map(str.encode, ids))
    except TypeError:
        if not any(i is not None for i in ids):
            return None
        return list(map(_utf8, ids))


def _jlen(v: Any) -> int:
    """The bytes of v in JSON as opensearch-py's serializer writes it."""
    if type(v) is str and v.isascii() and v.isprintable() and '"' not in v and "\\" not in v:
        return len(v) + 2
    return len(json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str).encode())


_IDLE = object()  # source(): no action yet, the results may be served
_FLUSH = object()  # source(): flush_after_seconds passed with no new action (a None
                   # in the user's actions is an action, refused as opensearch-py does)


def _refused_outcomes(chunk: _Chunk, raise_on_error: bool, raise_on_exception: bool,
                      ignore_status: Tuple[Any, ...]
                      ) -> Iterator[Tuple[int, bool, Dict[str, Any]]]:
    """What the peers' _process_bulk_chunk_error yields (and raises) for a
    chunk the server refused whole (chunk.refused, a 400): every action a
    failed item with the error's text, its status and the exception."""
    e: Any = chunk.refused
    status = e.status_code
    if raise_on_exception and status not in ignore_status:
        raise e
    errs: List[Dict[str, Any]] = []
    for k, op_type in enumerate(chunk.op_types):
        info: Dict[str, Any] = {"error": str(e), "status": status, "exception": e}
        if op_type != "delete":
            info["data"] = chunk.datas[k]
        info.update(chunk.meta(k))
        errs.append({op_type: info})
    if raise_on_error and status not in ignore_status:
        raise _errors.bulk_index_error()("%i document(s) failed to index." % len(errs),
                                         errs)  # type: ignore[call-arg]
    for k, err in enumerate(errs):
        yield k, False, err


def _default_expand(callback: Any, flavour: Optional[str]) -> Tuple[bool, Optional[str]]:
    """(whether callback is a default expand_action, the peer whose
    expand_action it does): ours does the client's peer's, a peer's own
    that peer's."""
    if callback is expand_action:
        return True, flavour
    for peer in _peers.INSTALLED:
        mod = _peers.module(peer)
        if mod is not None and callback is getattr(mod, "expand_action", None):
            return True, peer
    return False, flavour


class _BulkMeta(enum.Enum):
    flush = 1


# elasticsearch-py's BULK_FLUSH: among the actions, it sends the chunk read
# so far. The peer's own object when elasticsearch-py is installed (so that
# either module's works with either helper), else one of ours.
_es_helpers = _peers.module(_peers.ELASTICSEARCH)
BULK_FLUSH: Any = getattr(_es_helpers, "BULK_FLUSH", None) or _BulkMeta.flush
_PEER_FLUSH: Any = _BulkMeta.flush


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
