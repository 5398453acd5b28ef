"""The peers whose helpers esbulk.helpers stands in for: opensearch-py
(package opensearchpy) and elasticsearch-py (package elasticsearch).

Which are installed is found without importing them (importlib's find_spec);
a peer's modules are imported when first asked for. The *primary* peer, whose
signatures and expand_action esbulk.helpers shows when a call has no client
to go by, is opensearch-py when it is installed, else elasticsearch-py.
A client object decides for its own calls: its class's module (or a base
class's) names its peer.
"""
import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any, List, Optional

OPENSEARCH = "opensearchpy"
ELASTICSEARCH = "elasticsearch"
NAMES = (OPENSEARCH, ELASTICSEARCH)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # pragma: no cover - a broken install
        return False


INSTALLED: List[str] = [n for n in NAMES if _installed(n)]
PRIMARY: Optional[str] = INSTALLED[0] if INSTALLED else None


def module(peer: Optional[str], sub: str = "helpers") -> Optional[ModuleType]:
    """peer's module (opensearchpy.helpers, elasticsearch.exceptions...), or
    None when that peer is not installed or does not import."""
    if peer is None or peer not in INSTALLED:
        return None
    try:
        return importlib.import_module("%s.%s" % (peer, sub))
    except Exception:  # pragma: no cover - depends on what is installed
        return None


def helpers_modules() -> List[ModuleType]:
    """The helpers modules of the installed peers, primary first."""
    return [m for m in (module(p) for p in INSTALLED) if m is not None]


def of_client(client: Any) -> Optional[str]:
    """The peer of client: OPENSEARCH or ELASTICSEARCH when its class (or a
    base class) comes from that package, else the primary peer (a URL, a
    list of URLs, an object of another kind)."""
    # __class__: a Mock(spec=OpenSearch) says it is an OpenSearch
    for klass in getattr(client, "__class__", type(client)).__mro__:
        root = (getattr(klass, "__module__", None) or "").split(".")[0]
        if root in NAMES and root in INSTALLED:
            return root
    if not isinstance(client, (str, bytes, list, tuple)) and not is_mock(client):
        # an object of the user's that holds a client's transport (a
        # wrapper): elasticsearch-py 8's is elastic-transport's
        root = (type(getattr(client, "transport", None)).__module__ or "").split(".")[0]
        root = ELASTICSEARCH if root == "elastic_transport" else root
        if root in NAMES and root in INSTALLED:
            return root
    return PRIMARY


def is_mock(client: Any) -> bool:
    """Whether client is a unittest.mock object (Mock, MagicMock, a
    create_autospec of a client): it has no server behind it that libesbulk
    could send to, so the helpers hand such a call to the peer's own
    implementation, which calls the mock as it expects."""
    mock = sys.modules.get("unittest.mock")
    return mock is not None and isinstance(client, mock.NonCallableMock)


def calls_its_own_bulk(client: Any) -> bool:
    """Whether a helper given client must call client.bulk() itself, so
    that the call goes to the peer's own helper rather than to libesbulk
    (which reads the hosts and credentials of a client and never calls
    it): a mock (is_mock), or an object whose bulk() is not a peer client's
    own (a wrapper of the user's with a bulk of its own, a subclass that
    overrides it, a bulk patched onto the instance). Their bulk() is what
    the caller asked to be called: libesbulk would skip it."""
    if isinstance(client, (str, bytes, list, tuple)):
        return False
    if is_mock(client):
        return True
    if "bulk" in (getattr(client, "__dict__", None) or {}):
        return True
    f = getattr(type(client), "bulk", None)
    if f is None:
        return False
    return (getattr(f, "__module__", None) or "").split(".")[0] not in NAMES
