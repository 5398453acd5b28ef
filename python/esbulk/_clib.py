"""Loading libesbulk with ctypes, and the exact C signature of every function used.

The library is looked for, in this order: the path in $ESBULK_LIBRARY; a copy
shipped inside the package (esbulk/libs/libesbulk.so*); the system's
(ctypes.util.find_library("esbulk"), which searches the linker cache and
LD_LIBRARY_PATH). The first that loads wins; when none does, ImportError names
every place tried and why it failed.

ctypes' CDLL releases the GIL around every foreign call, so the library's
waits (esbulk_poll_results, esbulk_flush) let other Python threads run.
"""
import array
import ctypes
import ctypes.util
import glob
import os
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_void_p
from typing import List, Optional

# esbulk_err_t (include/esbulk.h)
OK = 0
ERR_INVALID_ARG = -1
ERR_NOMEM = -2
ERR_INVALID_UTF8 = -3
ERR_UNKNOWN_KEY = -4
ERR_BAD_VALUE = -5
ERR_QUEUE_FULL = -14
ERR_TIMED_OUT = -15
ERR_CLOSED = -16
ERR_DOC_TOO_LARGE = -17
ERR_INVALID_JSON = -18
ERR_ITEM = -19
ERR_RESULTS_HELD = -23

OUTCOME_INDEXED = 0
OUTCOME_FAILED = 1
OUTCOME_POSSIBLY = 2

OPS = {"index": 0, "create": 1, "update": 2, "delete": 3}
OP_NAMES = ("index", "create", "update", "delete")
VERSION_TYPES = {"external": 1, "external_gte": 2}

_SIGNATURES = (
    ("esbulk_version", c_uint32),
    ("esbulk_version_str", c_char_p),
    ("esbulk_err2str", c_char_p, c_int32),
    ("esbulk_free", None, c_void_p),
    ("esbulk_conf_new", c_void_p),
    ("esbulk_conf_set", c_int32, c_void_p, c_char_p, c_char_p, c_char_p, c_size_t),
    ("esbulk_conf_destroy", None, c_void_p),
    ("esbulk_new", c_void_p, c_void_p, c_char_p, c_size_t),
    ("esbulk_docopts_new", c_void_p),
    ("esbulk_docopts_destroy", None, c_void_p),
    ("esbulk_docopts_clear", None, c_void_p),
    ("esbulk_docopts_set_version", c_int32, c_void_p, c_int64, c_int32),
    ("esbulk_docopts_set_if_seq_no", c_int32, c_void_p, c_int64, c_int64),
    ("esbulk_docopts_set_pipeline", c_int32, c_void_p, c_char_p),
    ("esbulk_docopts_set_require_alias", c_int32, c_void_p, c_int32),
    ("esbulk_docopts_set_retry_on_conflict", c_int32, c_void_p, c_int32),
    ("esbulk_add_opts", c_int32, c_void_p, c_int32, c_char_p, c_char_p, c_size_t, c_char_p,
     c_size_t, c_char_p, c_size_t, c_void_p, c_void_p, c_char_p, c_size_t),
    ("esbulk_add_batch_opts", c_int32, c_void_p, c_size_t, POINTER(c_int32), POINTER(c_char_p),
     POINTER(c_char_p), POINTER(c_size_t), POINTER(c_char_p), POINTER(c_size_t),
     POINTER(c_char_p), POINTER(c_size_t), POINTER(c_void_p), POINTER(c_void_p),
     POINTER(c_size_t), c_char_p, c_size_t),
    ("esbulk_flush", c_int32, c_void_p, c_int32),
    ("esbulk_close", c_int32, c_void_p, c_int32),
    ("esbulk_destroy", None, c_void_p),
    ("esbulk_pending", c_int64, c_void_p),
    ("esbulk_auth_update", c_int32, c_void_p, c_void_p, c_char_p, c_size_t),
    ("esbulk_poll_results", c_int32, c_void_p, POINTER(c_void_p), c_size_t, c_int32),
    ("esbulk_results_release", c_int32, c_void_p),
    ("esbulk_log_take", c_int32, c_void_p, POINTER(c_int32), c_char_p, c_size_t, c_char_p,
     c_size_t),
    ("esbulk_stats_json", c_void_p, c_void_p),
    ("esbulk_result_opaque", c_void_p, c_void_p),
    ("esbulk_result_outcome", c_int32, c_void_p),
    ("esbulk_result_err", c_int32, c_void_p),
    ("esbulk_result_op", c_int32, c_void_p),
    ("esbulk_result_index", c_char_p, c_void_p),
    ("esbulk_result_id", c_char_p, c_void_p),
    ("esbulk_result_status", c_int32, c_void_p),
    ("esbulk_result_error_type", c_char_p, c_void_p),
    ("esbulk_result_error_reason", c_char_p, c_void_p),
    ("esbulk_result_error_cause_type", c_char_p, c_void_p),
    ("esbulk_result_error_cause_reason", c_char_p, c_void_p),
    ("esbulk_result_result", c_char_p, c_void_p),
    ("esbulk_result_seq_no", c_int64, c_void_p),
    ("esbulk_result_primary_term", c_int64, c_void_p),
    ("esbulk_result_version", c_int64, c_void_p),
    ("esbulk_result_attempts", c_int32, c_void_p),
    ("esbulk_result_body", c_void_p, c_void_p, POINTER(c_size_t)),
)
# Newer than the rest: used when present (a library without it is read one
# accessor call at a time, as before).
_OPTIONAL = (
    ("esbulk_results_read", ctypes.c_int64, c_void_p, c_size_t, c_void_p, c_void_p, c_void_p,
     c_void_p, c_size_t, POINTER(c_size_t)),
)
RESULT_INTS = 6     # ESBULK_RESULT_INTS
RESULT_LONGS = 3    # ESBULK_RESULT_LONGS
RESULT_NO_INDEX, RESULT_NO_ID, RESULT_NO_RESULT = 1, 2, 4


def _typecode(size: int) -> str:
    """The array module's unsigned type code of this many bytes."""
    for t in "BHILQ":
        if array.array(t).itemsize == size:
            return t
    raise ImportError("esbulk: no array type code of %d bytes" % size)


# array.array type codes of a pointer and of a size_t: lists become C arrays
# with array.array(...) (a C loop) and (T * n).from_buffer(), no per-element
# ctypes conversion.
PTR_CODE = _typecode(ctypes.sizeof(c_void_p))
SIZE_CODE = _typecode(ctypes.sizeof(c_size_t))


def _candidates() -> List[str]:
    out = []
    env = os.environ.get("ESBULK_LIBRARY")
    if env:
        out.append(env)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libs")
    out.extend(sorted(glob.glob(os.path.join(here, "libesbulk.so*"))) or
               [os.path.join(here, "libesbulk.so")])
    found = ctypes.util.find_library("esbulk")
    out.append(found if found else "ctypes.util.find_library('esbulk')")
    return out


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        if path.startswith("ctypes.util"):
            tried.append("%s: not found" % path)
            continue
        if os.sep in path and not os.path.exists(path):
            tried.append("%s: no such file" % path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s" % (path, e))
            continue
        for name, restype, *argtypes in _SIGNATURES:
            try:
                f = getattr(lib, name)
            except AttributeError:
                tried.append("%s: no symbol %s (too old a libesbulk?)" % (path, name))
                break
            f.restype = restype
            f.argtypes = argtypes
        else:
            for name, restype, *argtypes in _OPTIONAL:
                f = getattr(lib, name, None)
                if f is not None:
                    f.restype = restype
                    f.argtypes = argtypes
            lib.esbulk_path = path  # type: ignore[attr-defined]
            return lib
    raise ImportError("esbulk: libesbulk not found; tried $ESBULK_LIBRARY (%s), the package's "
                      "own copy and the system's:\n  %s\nBuild and install libesbulk, or set "
                      "ESBULK_LIBRARY to the path of libesbulk.so."
                      % (os.environ.get("ESBULK_LIBRARY", "unset"), "\n  ".join(tried)))


lib = _load()
HAVE_RESULTS_READ = hasattr(lib, "esbulk_results_read")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", c_char_p), ("dli_fbase", c_void_p), ("dli_sname", c_char_p),
                ("dli_saddr", c_void_p)]


def loaded_path() -> str:
    """The file the library was loaded from: dladdr(3) of one of its
    functions gives the path the dynamic linker resolved (a name that
    find_library gave, "libesbulk.so.0", becomes its full path); the name
    it was loaded by when that cannot be asked."""
    try:
        dladdr = None
        for name in (None, ctypes.util.find_library("dl")):  # libc (glibc >= 2.34), libdl
            try:
                dladdr = ctypes.CDLL(name).dladdr
                break
            except (OSError, AttributeError):
                continue
        if dladdr is not None:
            dladdr.argtypes = [c_void_p, POINTER(_DlInfo)]
            dladdr.restype = ctypes.c_int
            info = _DlInfo()
            addr = ctypes.cast(lib.esbulk_version, c_void_p).value
            if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
                path = os.fsdecode(info.dli_fname)
                if os.sep in path:
                    return os.path.abspath(path)
    except Exception:  # pragma: no cover - best effort
        pass
    return str(lib.esbulk_path)


def err2str(err: int) -> str:
    return (lib.esbulk_err2str(err) or b"?").decode()


def dec(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.decode("utf-8", "replace")
