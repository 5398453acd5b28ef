"""The documents' JSON: encoded as opensearch-py's serializer encodes them
(orjson when installed, else json), and the body types a document may be."""
import datetime
import decimal
import functools
import json
import sys
import uuid
from typing import Any, Callable, Mapping, Optional, Union


def _default(data: Any) -> Any:
    """What neither json nor orjson encodes by itself, as opensearch-py's
    JSONSerializer.default: dates and times in ISO 8601, UUID as str,
    Decimal as float, numpy / pandas scalars and arrays; anything else is a
    TypeError (opensearch-py's helpers raise SerializationError), never its
    str()."""
    if isinstance(data, (datetime.date, datetime.time)):  # datetime is a date
        formatted = data.isoformat()
        if formatted != "NaT":  # pandas' NaT is a datetime
            return formatted
    if isinstance(data, uuid.UUID):
        return str(data)
    if isinstance(data, decimal.Decimal):
        return float(data)
    # numpy and pandas only when loaded already (the object would be theirs)
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(data, np.bool_):
            return bool(data)
        if isinstance(data, np.integer):
            return int(data)
        if isinstance(data, np.floating):
            return float(data)
        if isinstance(data, np.datetime64):
            return data.item().isoformat()
        if isinstance(data, np.ndarray):
            return data.tolist()
    pd = sys.modules.get("pandas")
    if pd is not None:
        if isinstance(data, (pd.Series, pd.Categorical)):
            return data.tolist()
        if isinstance(data, pd.Timestamp) and data is not getattr(pd, "NaT", None):
            return data.isoformat()
        if data is getattr(pd, "NA", None):
            return None
    raise TypeError("Unable to serialize %r (type: %s)" % (data, type(data)))


try:
    import orjson as _orjson  # type: ignore

    # called per document: a partial (C), no Python wrapper
    _dumps: Callable[[Any], bytes] = functools.partial(_orjson.dumps, default=_default)
    JSON_ENCODER = "orjson"
except ImportError:  # pragma: no cover - depends on what is installed
    _json_enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_default)

    def _dumps(obj: Any) -> bytes:
        return _json_enc.encode(obj).encode("utf-8")
    JSON_ENCODER = "json"

Body = Union[Mapping[str, Any], str, bytes, bytearray, memoryview, None]


def encode_body(body: Body) -> Optional[bytes]:
    """dict -> JSON (orjson when installed, else json); str -> UTF-8; bytes as is."""
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    return _dumps(body)
