"""esbulk: shard-aware, retried, per-document-reported bulk indexing into
OpenSearch and Elasticsearch, over the libesbulk C library.

    import esbulk
    with esbulk.Indexer("http://127.0.0.1:9200", flush_docs=1000) as ix:
        ix.add("logs", {"msg": "hello"}, id="1", on_result=print)

esbulk.helpers holds drop-in replacements of opensearch-py's and
elasticsearch-py's bulk helpers (bulk, streaming_bulk).
"""
from typing import Any

from ._clib import lib as _lib
from ._indexer import Indexer
from ._json import JSON_ENCODER
from ._result import Result
from . import errors as _errors
from .errors import ConfigError, EsbulkError, InvalidDocumentError, QueueFullError, TransportError

__version__ = "1.0.0"


def library_version() -> str:
    """The version of the libesbulk that was loaded."""
    return str(_lib.esbulk_version_str().decode())


def __getattr__(name: str) -> Any:
    if name == "BulkIndexError":  # made on first use (see esbulk.errors)
        return _errors.bulk_index_error()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def library_path() -> str:
    """The file the loaded libesbulk came from (its full path, also when it
    was found by name on the system's search path)."""
    from ._clib import loaded_path
    return loaded_path()


__all__ = ["Indexer", "Result", "BulkIndexError", "ConfigError", "EsbulkError",
           "InvalidDocumentError", "QueueFullError", "TransportError", "JSON_ENCODER",
           "library_version", "library_path"]
