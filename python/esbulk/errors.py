"""Exceptions of the esbulk package."""
from typing import Any, List, Optional

try:  # a subclass of the peer's class, so that `except helpers.BulkIndexError` keeps working
    from opensearchpy.helpers import BulkIndexError as _PeerBulkIndexError  # type: ignore
except Exception:  # pragma: no cover - depends on what is installed
    try:
        from elasticsearch.helpers import BulkIndexError as _PeerBulkIndexError  # type: ignore
    except Exception:
        _PeerBulkIndexError = Exception  # type: ignore


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
    options that do not fit the operation); it gets no result."""


class QueueFullError(EsbulkError, BufferError):
    """buffer.max.docs / buffer.max.bytes reached (a BufferError, as
    confluent-kafka's Producer raises); ``accepted`` documents were added."""


class BulkIndexError(_PeerBulkIndexError):  # type: ignore[misc,valid-type]
    """Documents failed, as opensearch-py's helpers.BulkIndexError: ``errors``
    is the list of {op: item} of the failed documents."""

    def __init__(self, message: str, errors: List[Any]) -> None:
        Exception.__init__(self, message, errors)

    @property
    def errors(self) -> List[Any]:  # type: ignore[override]
        return self.args[1]  # type: ignore[no-any-return]


class TransportError(EsbulkError):
    """A document could not be delivered (connection, HTTP, timeout, retries
    used up), raised by the helpers when raise_on_exception is true.
    ``status_code`` is the HTTP status when there was one, else "N/A"."""

    def __init__(self, message: str, status_code: Optional[Any] = None, code: int = 0) -> None:
        super().__init__(message, code)
        self.status_code = status_code if status_code else "N/A"
        self.error = message
