"""Exceptions of the esbulk package.

BulkIndexError is a subclass of the peer's class (opensearch-py's, else
elasticsearch-py's helpers.BulkIndexError), so that an ``except`` written for
the peer keeps working. It is made when first used (an attribute of this
module, of esbulk and of esbulk.helpers, looked up through the modules'
__getattr__): importing opensearch-py costs about 0.3 s of CPU, which a
program that passes URLs and never sees a BulkIndexError need not pay.
"""
import importlib
import threading
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Type


class EsbulkError(Exception):
    """A libesbulk call failed. ``code`` is the esbulk_err_t value (negative),
    ``accepted`` (for the add calls) how many documents were added before it."""

    def __init__(self, message: str, code: int = 0, accepted: int = 0) -> None:
        super().__init__(message)
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


def _peer_class() -> Type[Exception]:
    try:
        from opensearchpy.helpers import BulkIndexError as peer  # type: ignore
        return peer  # type: ignore[no-any-return]
    except Exception:  # pragma: no cover - depends on what is installed
        try:
            from elasticsearch.helpers import BulkIndexError as peer2  # type: ignore
            return peer2  # type: ignore[no-any-return]
        except Exception:
            return Exception


def _make_bulk_index_error() -> Type[Exception]:
    class BulkIndexError(_peer_class()):  # type: ignore[misc]
        """Documents failed, as opensearch-py's helpers.BulkIndexError: ``errors``
        is the list of {op: item} of the failed documents."""

        def __init__(self, message: str, errors: List[Any]) -> None:
            Exception.__init__(self, message, errors)

        @property
        def errors(self) -> List[Any]:
            return self.args[1]  # type: ignore[no-any-return]

    BulkIndexError.__module__ = __name__
    BulkIndexError.__qualname__ = "BulkIndexError"
    return BulkIndexError


_made: List[Type[Exception]] = []
_made_lock = threading.Lock()


def bulk_index_error() -> Type[Exception]:
    """The BulkIndexError class (made, once, on the first call)."""
    if not _made:
        with _made_lock:
            if not _made:
                _made.append(_make_bulk_index_error())
    return _made[0]


if TYPE_CHECKING:
    class BulkIndexError(Exception):
        def __init__(self, message: str, errors: List[Any]) -> None: ...
        @property
        def errors(self) -> List[Any]: ...
else:
    def __getattr__(name: str) -> Any:
        if name == "BulkIndexError":
            return bulk_index_error()
        raise AttributeError("module %r has no attribute %r" % (__name__, name))


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

    # properties, as the peer's (whose own would read args)
    @property
    def status_code(self) -> Any:
        return self._status_code

    @property
    def error(self) -> str:
        return self._error

    @property
    def info(self) -> Any:
        return None

    def __str__(self) -> str:
        return self._error


_transport: Dict[bool, Type[TransportError]] = {}


def transport_error(status_code: Any) -> Type[TransportError]:
    """The class the helpers raise for a document not delivered: a
    TransportError that is also the peer's (opensearch-py's, else
    elasticsearch-py's) ConnectionError when there was no HTTP status, or its
    TransportError, so that an ``except`` written for the peer catches it.
    Made on first use (importing the peer is slow)."""
    conn = not isinstance(status_code, int)
    cls = _transport.get(conn)
    if cls is None:
        with _made_lock:
            cls = _transport.get(conn)
            if cls is None:
                name = "ConnectionError" if conn else "TransportError"
                peer: Any = None
                for mod in ("opensearchpy.exceptions", "elasticsearch.exceptions"):
                    try:
                        peer = getattr(importlib.import_module(mod), name)
                        break
                    except Exception:  # pragma: no cover - depends on what is installed
                        continue
                if peer is None:  # pragma: no cover
                    cls = TransportError
                else:
                    cls = type("TransportError", (TransportError, peer),
                               {"__module__": __name__, "__qualname__": "TransportError"})
                _transport[conn] = cls
    return cls
