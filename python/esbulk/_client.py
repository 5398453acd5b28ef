"""What a peer client object gives the bulk helpers: its hosts, credentials,
headers and AWS signer, as libesbulk configuration keys. The client is read,
never called."""
import base64
from typing import Any, Dict, List, Mapping, Optional

from ._conf import _aws_keys
from .errors import ConfigError


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
