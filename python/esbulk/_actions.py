"""Helpers-style action dicts (Indexer.add_actions): their meta keys, what
the server ignores for an op, and parse_action."""
from typing import Any, Dict, Mapping, Tuple

from . import _clib
from .errors import InvalidDocumentError


_META_KEYS = {"_op_type", "_index", "_id", "_routing", "routing", "_source", "_if_seq_no",
              "if_seq_no", "_if_primary_term", "if_primary_term", "_version", "version",
              "_version_type", "version_type", "retry_on_conflict", "_retry_on_conflict",
              "pipeline", "require_alias", "_require_alias", "_parent", "_type"}


_SOURCE_FILTER_MSG = ("an update's _source that is not a mapping (%r) is a source filter for "
                      "the item's \"get\"; esbulk cannot send it nor return \"get\": drop "
                      "_source from the action")


# Options of an action dict the server accepts and ignores for its op, and
# the library refuses for it: dropped from the action (opensearch-py's
# helpers send them, and such documents are indexed or deleted)
_IGNORED_OPTS: Dict[str, Tuple[str, ...]] = {
    "index": ("retry_on_conflict",), "create": ("retry_on_conflict",), "update": ("pipeline",),
    "delete": ("retry_on_conflict", "pipeline")}


def parse_action(a: Any) -> Tuple[int, str, Any, Any, Any, Dict[str, Any]]:
    """An action dict of the bulk helpers -> (op, index, id, routing, body, options)."""
    if isinstance(a, (str, bytes)):
        raise InvalidDocumentError("an action without _index (a bare string) cannot be added",
                                   _clib.ERR_INVALID_ARG)
    g = a.get
    op = g("_op_type", "index")
    opc = _clib.OPS.get(op)
    if opc is None:
        raise InvalidDocumentError("_op_type must be index, create, update or delete, not %r"
                                   % (op,), _clib.ERR_INVALID_ARG)
    index = g("_index")
    if index is None:
        raise InvalidDocumentError("action without _index: %r" % (a,), _clib.ERR_INVALID_ARG)
    if g("_parent") is not None:
        # the server no longer knows parents ("unknown parameter [parent]");
        # dropped, the child would be routed by its own _id (the helpers'
        # item is a 400)
        raise InvalidDocumentError("_parent: the server has no parent-child routing; give the "
                                   "child the parent's _routing", _clib.ERR_INVALID_ARG)
    routing = g("_routing", g("routing"))
    if opc == 3:
        body = None
    elif "_source" in a:
        body = a["_source"]
        if opc == 2 and not isinstance(body, Mapping):
            # opensearch-py: a source filter for the update's answer ("get"),
            # on the action line; libesbulk sends no such field nor returns "get"
            raise InvalidDocumentError(_SOURCE_FILTER_MSG % (body,), _clib.ERR_INVALID_ARG)
    else:
        body = {k: v for k, v in a.items() if k not in _META_KEYS}
    o: Dict[str, Any] = {}
    v = g("_version", g("version"))
    if v is not None:
        o["version"] = v
        o["version_type"] = g("_version_type", g("version_type"))
    elif g("_version_type", g("version_type")) is not None:
        raise InvalidDocumentError("version_type without version", _clib.ERR_INVALID_ARG)
    s = g("_if_seq_no", g("if_seq_no"))
    if s is not None:
        o["if_seq_no"] = s
    t = g("_if_primary_term", g("if_primary_term"))
    if t is not None:
        o["if_primary_term"] = t
    if g("pipeline") is not None:
        o["pipeline"] = g("pipeline")
    ra = g("require_alias", g("_require_alias"))
    if ra is not None:
        o["require_alias"] = ra
    rc = g("retry_on_conflict", g("_retry_on_conflict"))
    if rc is not None:
        o["retry_on_conflict"] = rc
    for k in _IGNORED_OPTS[op]:
        o.pop(k, None)
    if o:
        for k in ("version", "version_type", "if_seq_no", "if_primary_term", "pipeline",
                  "require_alias", "retry_on_conflict"):
            o.setdefault(k, None)
    return opc, index, g("_id"), routing, body, o
