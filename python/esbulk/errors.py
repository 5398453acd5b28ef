"""Exceptions of the esbulk package.

BulkIndexError and ScanError are subclasses of the installed peers' classes
(opensearch-py's and elasticsearch-py's helpers.BulkIndexError / ScanError,
of both when both are installed), so that an ``except`` written for either
peer keeps working. They are made when first used (attributes of this
module, of esbulk and of esbulk.helpers, looked up through the modules'
__getattr__): importing a peer costs about 0.3 s of CPU, which a program
that uses esbulk.Indexer alone need not pay. esbulk.helpers.errors is this
module, as the peers' helpers.errors holds their BulkIndexError and
ScanError.
"""
import importlib
import threading
import types

from . import _peers
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Type


class EsbulkError(Exception):
    """A libesbulk call failed. ``code`` is the esbulk_err_t value (negative),
    ``accepted`` (for the add calls) how many documents were added before it."""

    def __init__(self, message: str, code: int = 0, accepted: int = 0) -> None:
        # not super(): the peers' bases the helpers' subclasses add after this
        # one (elasticsearch-py's ApiError) take other arguments
        Exception.__init__(self, message)
        self.code = code
        self.accepted = accepted


class ConfigError(EsbulkError, ValueError):
    """An unknown configuration key or a value out of range."""


class InvalidDocumentError(EsbulkError, ValueError):
    """A document refused at add time (bad JSON, too large, bad UTF-8 or
    options that do not fit the operation); it gets no result. ``accepted``
    is its position in the call (the documents before it were added),
    ``reason`` the library's explanation."""

    reason: str = ""


class QueueFullError(EsbulkError, BufferError):
    """buffer.max.docs / buffer.max.bytes reached (a BufferError, as
    confluent-kafka's Producer raises); ``accepted`` documents were added."""


def _peer_classes(name: str, sub: str = "helpers") -> List[Type[Exception]]:
    """The installed peers' classes called name (in their module sub),
    primary peer first, each once."""
    out: List[Type[Exception]] = []
    for peer in _peers.INSTALLED:
        mod = _peers.module(peer, sub)
        cls = getattr(mod, name, None) if mod is not None else None
        if isinstance(cls, type) and cls not in out:
            out.append(cls)
    return out


def _bases(name: str, sub: str = "helpers") -> Tuple[type, ...]:
    return tuple(_peer_classes(name, sub)) or (Exception,)


def _make_bulk_index_error() -> Type[Exception]:
    class BulkIndexError(*_bases("BulkIndexError")):  # type: ignore[misc]
        """Documents failed, as the peers' helpers.BulkIndexError: ``errors``
        is the list of {op: item} of the failed documents."""

        def __init__(self, message: str, errors: List[Any]) -> None:
            Exception.__init__(self, message, errors)

        @property
        def errors(self) -> List[Any]:
            return self.args[1]  # type: ignore[no-any-return]

        @errors.setter
        def errors(self, value: List[Any]) -> None:  # elasticsearch-py's sets it
            self.args = (self.args[0] if self.args else "", value)

    BulkIndexError.__module__ = __name__
    BulkIndexError.__qualname__ = "BulkIndexError"
    return BulkIndexError


def _make_scan_error() -> Type[Exception]:
    class ScanError(*_bases("ScanError")):  # type: ignore[misc]
        """A scan (esbulk.helpers.scan, the peer's own) failed: the peers'
        ScanError, with the ``scroll_id`` it stopped at."""

        def __init__(self, scroll_id: Any, *args: Any) -> None:
            Exception.__init__(self, *args)
            self.scroll_id = scroll_id

    ScanError.__module__ = __name__
    ScanError.__qualname__ = "ScanError"
    return ScanError


_made: Dict[str, Type[Exception]] = {}
_made_lock = threading.Lock()
_MAKERS = {"BulkIndexError": _make_bulk_index_error, "ScanError": _make_scan_error}


def _lazy(name: str) -> Type[Exception]:
    cls = _made.get(name)
    if cls is None:
        with _made_lock:
            cls = _made.get(name)
            if cls is None:
                cls = _made[name] = _MAKERS[name]()
    return cls


def bulk_index_error() -> Type[Exception]:
    """The BulkIndexError class (made, once, on the first call)."""
    return _lazy("BulkIndexError")


def scan_error() -> Type[Exception]:
    """The ScanError class (made, once, on the first call)."""
    return _lazy("ScanError")


if TYPE_CHECKING:
    class BulkIndexError(Exception):
        def __init__(self, message: str, errors: List[Any]) -> None: ...
        @property
        def errors(self) -> List[Any]: ...

    class ScanError(Exception):
        scroll_id: Any
        def __init__(self, scroll_id: Any, *args: Any) -> None: ...
else:
    def __getattr__(name: str) -> Any:
        if name in _MAKERS:
            return _lazy(name)
        raise AttributeError("module %r has no attribute %r" % (__name__, name))

    def __dir__() -> List[str]:
        return sorted(set(globals()) | set(_MAKERS))


class TransportError(EsbulkError):
    """A document could not be delivered (connection, HTTP, timeout, retries
    used up), raised by the helpers when raise_on_exception is true.
    ``status_code`` is the HTTP status when there was one, else "N/A".
    The helpers raise it as a subclass of the peer's ConnectionError (no
    HTTP status) or TransportError too (see transport_error())."""

    def __init__(self, message: str, status_code: Optional[Any] = None, code: int = 0) -> None:
        super().__init__(message, code)
        self._status_code = status_code if status_code else "N/A"
        self._error = message
        # what elasticsearch-py's (elastic-transport's) exceptions carry
        self.message = message
        self.errors: Tuple[Any, ...] = ()
        self.body: Any = None
        self.meta: Any = None

    # properties, as the peer's (whose own would read args)
    @property
    def status_code(self) -> Any:
        return self._status_code

    @property
    def error(self) -> str:
        return self._error

    @property
    def info(self) -> Any:
        return self.body

    def __str__(self) -> str:
        return self.message


_transport: Dict[Any, Type[TransportError]] = {}


def transport_error(status_code: Any) -> Type[TransportError]:
    """The class the helpers raise for a document not delivered: a
    TransportError that is also the installed peers' (opensearch-py's and
    elasticsearch-py's) ConnectionError when there was no HTTP status, or
    their TransportError, so that an ``except`` written for either peer
    catches it. Made on first use (importing a peer is slow)."""
    conn = not isinstance(status_code, int)
    return _transport_class(conn, "ConnectionError" if conn else "TransportError")


def request_error(flavour: Optional[str]) -> Type[TransportError]:
    """The class of a request the server refuses whole with HTTP 400 (a
    bulk request with an action that has no index: "index is missing"):
    the peers' 400 classes (opensearch-py's RequestError, elasticsearch-py's
    BadRequestError), named as flavour's, the peer whose client the helper
    was given, names it in str()."""
    name = "BadRequestError" if flavour == _peers.ELASTICSEARCH else "RequestError"
    return _transport_class(("request", name), name)


def _transport_class(key: Any, name: str) -> Type[TransportError]:
    cls = _transport.get(key)
    if cls is None:
        with _made_lock:
            cls = _transport.get(key)
            if cls is None:
                if name in ("RequestError", "BadRequestError"):
                    peers = (_peer_classes("RequestError", "exceptions") +
                             _peer_classes("BadRequestError", "exceptions"))
                else:
                    peers = _peer_classes(name, "exceptions")
                # (elasticsearch-py's RequestError is its BadRequestError)
                bases = (TransportError,) + tuple(dict.fromkeys(peers))
                own = name if name.endswith("RequestError") else "TransportError"
                cls = type(own, bases, {"__module__": __name__, "__qualname__": own})
                _transport[key] = cls
    return cls


def make_request_error(flavour: Optional[str], etype: str, reason: str) -> TransportError:
    """A request_error(flavour) as the peer raises it for the server's 400
    answer {"error": {"type": etype, "reason": reason}}: str() as the peer's
    ("RequestError(400, 'etype', 'reason')"), .error the type, .info the
    body."""
    cls = request_error(flavour)
    e = cls("%s(400, %r, %r)" % (cls.__name__, etype, reason), 400)
    e._error = etype
    cause = {"type": etype, "reason": reason}
    e.body = {"error": dict(cause, root_cause=[cause]), "status": 400}
    e.meta = types.SimpleNamespace(status=400)
    return e
