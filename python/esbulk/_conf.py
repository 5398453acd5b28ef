"""libesbulk configuration from Python: the keys of esbulk-config(7), their
Python spellings and values, hosts as URLs, credentials as auth.* keys, and
the esbulk_conf_t they make."""
import ctypes
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from . import _clib
from ._clib import lib
from .errors import ConfigError


# Every key of esbulk-config(7); a Python-style keyword (flush_docs) is the key
# with its dots as underscores.
CONF_KEYS = (
    "urls", "connect.timeout.ms", "request.timeout.ms", "response.max.bytes",
    "auth.username", "auth.password", "auth.api_key", "auth.bearer", "auth.aws.region",
    "auth.aws.service", "auth.aws.access_key_id", "auth.aws.secret_access_key",
    "auth.aws.session_token", "http.headers",
    "tls.ca.file", "tls.ca.path", "tls.cert.file", "tls.key.file", "tls.key.password",
    "tls.insecure", "topology.discovery", "topology.refresh.interval.ms", "topology.wait.ms",
    "topology.idle.ms", "node.recheck.ms", "log.level", "routing.level", "flush.docs",
    "flush.bytes", "flush.interval.ms", "max.inflight.per.node", "buffer.max.bytes",
    "buffer.max.docs", "enqueue.timeout.ms", "max.doc.bytes", "id.generate", "body.validate",
    "compression", "compression.level", "retry.max", "retry.backoff.ms",
    "retry.backoff.max.ms", "retry.on.cluster_block", "delivery.timeout.ms", "ordering",
    "result.failures_only", "result.keep_body", "result.meta", "stats.interval.ms",
    "bulk.pipeline", "bulk.refresh", "malloc.tune",
)
_PY_KEYS = {k.replace(".", "_"): k for k in CONF_KEYS}


def conf_key(name: str) -> str:
    """The libesbulk key for a keyword: "flush.docs" as is, flush_docs -> flush.docs."""
    if "." in name:
        return name
    return _PY_KEYS.get(name, name.replace("_", "."))


def conf_value(value: Any, key: str = "") -> str:
    """A keyword's value as the library's string: a bool as true/false, a
    list comma-separated (urls); for http.headers a mapping or a list of
    "Name: value" strings as one line each."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Mapping):
        return "\n".join("%s: %s" % (k, v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ("\n" if key == "http.headers" else ",").join(str(v) for v in value)
    return str(value)


def hosts_to_urls(hosts: Any) -> Optional[str]:
    """A URL, a list of URLs, or opensearch-py style host dicts -> "urls"."""
    if hosts is None:
        return None
    if isinstance(hosts, (str, bytes, Mapping)):  # one host
        hosts = [hosts]
    out = []
    for h in hosts:
        if isinstance(h, bytes):
            h = h.decode()
        if isinstance(h, Mapping):
            scheme = h.get("scheme") or ("https" if h.get("use_ssl") else "http")
            host = str(h.get("host", "127.0.0.1"))
            if ":" in host and not host.startswith("["):  # IPv6
                host = "[%s]" % host
            # as opensearch-py: "es" and "/es/" are "/es", "/" is none
            prefix = str(h.get("url_prefix") or "").strip("/")
            url = "%s://%s:%s%s" % (scheme, host, h.get("port") or 9200,
                                    "/" + prefix if prefix else "")
            out.append(url)
        else:
            out.append(str(h))
    return ",".join(out)


def _aws_keys(creds: Any) -> Dict[str, str]:
    """The auth.aws.* credential keys of AWS credentials: frozen when they
    can be (botocore's refreshable ones), as opensearch-py signs with them."""
    frozen = getattr(creds, "get_frozen_credentials", None)
    if callable(frozen):
        creds = frozen()
    key, secret = getattr(creds, "access_key", None), getattr(creds, "secret_key", None)
    if not key or not secret:
        raise ConfigError("aws_credentials: no access_key and secret_key in %r"
                          % (type(creds).__name__,), _clib.ERR_BAD_VALUE)
    keys = {"auth.aws.access_key_id": str(key), "auth.aws.secret_access_key": str(secret)}
    token = getattr(creds, "token", None)
    if token:
        keys["auth.aws.session_token"] = str(token)
    return keys


# What a credentials function may return, in a dict: these names, or the
# configuration's own keys.
_CRED_NAMES = {"username": "auth.username", "password": "auth.password",
               "api_key": "auth.api_key", "bearer": "auth.bearer"}
_CRED_KEYS = tuple(_CRED_NAMES.values())


def _cred_keys(got: Any) -> Dict[str, str]:
    """The auth.* keys of what a credentials function returned: a
    (username, password) pair, or a dict of username, password, api_key
    and bearer (or auth.username, ...). Values are str; None or "" leaves
    a key out."""
    if isinstance(got, (tuple, list)) and len(got) == 2 and \
            all(isinstance(v, str) for v in got):
        pairs = [("auth.username", got[0]), ("auth.password", got[1])]
    elif isinstance(got, dict):
        pairs = []
        for name, value in got.items():
            key = _CRED_NAMES.get(name, name) if isinstance(name, str) else None
            if key not in _CRED_KEYS:
                raise TypeError("credentials() returned a dict with %r: its keys are "
                                "username, password, api_key and bearer" % (name,))
            if value is not None and not isinstance(value, str):
                raise TypeError("credentials() returned %s for %r, not a str"
                                % (type(value).__name__, name))
            pairs.append((key, value))
    else:
        raise TypeError("credentials() returned %s: expected a (username, password) pair "
                        "or a dict of username, password, api_key and bearer"
                        % (type(got).__name__,))
    keys = {k: v for k, v in pairs if v}
    if not keys:
        raise TypeError("credentials() returned no credentials")
    return keys


def _make_conf(settings: Iterable[Tuple[str, str]]) -> int:
    """A new esbulk_conf_t with settings set (destroyed if one is refused)."""
    c = lib.esbulk_conf_new()
    if not c:
        raise MemoryError("esbulk_conf_new")
    err = ctypes.create_string_buffer(512)
    for k, v in settings:
        rc = lib.esbulk_conf_set(c, k.encode(), v.encode(), err, len(err))
        if rc != _clib.OK:
            lib.esbulk_conf_destroy(c)
            msg = _clib.dec(err.value) or _clib.err2str(rc)
            # the library's message names the key already, mostly
            raise ConfigError(msg if k in msg else "%s: %s" % (k, msg), rc)
    return int(c)
