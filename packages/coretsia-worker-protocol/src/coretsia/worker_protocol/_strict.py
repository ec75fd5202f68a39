"""Strict JSON in and deterministic JSON out: the hand-written codec of the hot frames.

The control, locator, state and worker-channel frames are decoded on the probe path
(``status`` is a Kubernetes exec probe) and in every worker's boot path, so they cannot
afford cattrs (about 65 ms of imports). This module is the small replacement: one reader
per JSON type that checks the exact type (``True`` is not an ``int``, ``"5"`` is not a
number), exact key sets, and versions first, so a frame of a newer version is reported as
such instead of as "unknown key".

Readers raise :class:`FieldError`; the frame modules turn it into a
:class:`RemoteProtocolError` when decoding and a :class:`LocalProtocolError` when encoding,
so that what we send is checked by exactly the rules the peer applies.
"""

from __future__ import annotations

import json

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError

# Not ``from typing import ...``: this module is on every worker's boot path and the
# probe path, where importing typing costs milliseconds; type checkers honour a
# module-level TYPE_CHECKING all the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import enum
    from collections.abc import Callable
    from typing import Any, Final, TypeVar

    E = TypeVar("E", bound=enum.Enum)
    T = TypeVar("T")

    JsonObject = dict[str, Any]
else:
    JsonObject = dict[str, object]  # the alias at run time, for introspection only

_HEX: Final = frozenset("0123456789abcdef")


class FieldError(Exception):
    """A frame broke a rule; carries the reason token and the schema path, nothing else."""

    def __init__(self, reason: Reason, path: str = "$") -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.path = path


class _DuplicateKeyError(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKeyError
    return obj


def _no_constants(_name: str) -> Any:
    # NaN and Infinity are not JSON; Python's json accepts them unless told not to.
    raise ValueError


def dumps(obj: JsonObject) -> bytes:
    """Deterministic JSON: sorted keys, no insignificant whitespace, UTF-8."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def loads(data: bytes, max_bytes: int) -> JsonObject:
    """Decode one JSON object strictly; the size is checked before anything is parsed."""
    if len(data) > max_bytes:
        raise FieldError(Reason.FRAME_OVERSIZED)
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise FieldError(Reason.FRAME_NOT_UTF8) from None
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except _DuplicateKeyError:
        raise FieldError(Reason.FRAME_DUPLICATE_KEY) from None
    except (ValueError, RecursionError):
        raise FieldError(Reason.FRAME_NOT_JSON) from None
    if type(obj) is not dict:
        raise FieldError(Reason.FRAME_NOT_OBJECT)
    return obj


def check_version(obj: JsonObject, supported: int) -> None:
    """Check ``version`` before anything else, so a newer frame says so plainly."""
    if "version" not in obj:
        raise FieldError(Reason.FRAME_MISSING_KEY, "$.version")
    version = obj["version"]
    if type(version) is not int:
        raise FieldError(Reason.FRAME_WRONG_TYPE, "$.version")
    if version != supported:
        raise FieldError(Reason.FRAME_UNSUPPORTED_VERSION, "$.version")


def get_type(obj: JsonObject) -> str:
    """The ``type`` tag of a tagged frame (its value is checked by the caller)."""
    if "type" not in obj:
        raise FieldError(Reason.FRAME_MISSING_KEY, "$.type")
    kind = obj["type"]
    if type(kind) is not str:
        raise FieldError(Reason.FRAME_WRONG_TYPE, "$.type")
    return kind


def check_keys(obj: JsonObject, keys: frozenset[str]) -> None:
    """Exactly these keys: an unknown one is never named (it is the peer's text)."""
    for key in obj:
        if key not in keys:
            raise FieldError(Reason.FRAME_UNKNOWN_KEY)
    for key in sorted(keys):
        if key not in obj:
            raise FieldError(Reason.FRAME_MISSING_KEY, f"$.{key}")


def get_int(obj: JsonObject, key: str, lo: int, hi: int) -> int:
    """An integer in ``[lo, hi]``; booleans and floats are rejected."""
    value = obj[key]
    if type(value) is not int:
        raise FieldError(Reason.FRAME_WRONG_TYPE, f"$.{key}")
    if not lo <= value <= hi:
        raise FieldError(Reason.FRAME_INVALID_VALUE, f"$.{key}")
    return value


def get_bool(obj: JsonObject, key: str) -> bool:
    """A JSON boolean, nothing else."""
    value = obj[key]
    if type(value) is not bool:
        raise FieldError(Reason.FRAME_WRONG_TYPE, f"$.{key}")
    return value


def get_str(obj: JsonObject, key: str, max_len: int = 256) -> str:
    """A non-empty string of at most ``max_len`` characters that UTF-8 can encode."""
    value = obj[key]
    if type(value) is not str:
        raise FieldError(Reason.FRAME_WRONG_TYPE, f"$.{key}")
    if not 0 < len(value) <= max_len:
        raise FieldError(Reason.FRAME_INVALID_VALUE, f"$.{key}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape
        raise FieldError(Reason.FRAME_INVALID_VALUE, f"$.{key}") from None
    return value


def get_enum(obj: JsonObject, key: str, kind: type[E]) -> E:
    """A string that is one of an enum's values."""
    value = obj[key]
    if type(value) is not str:
        raise FieldError(Reason.FRAME_WRONG_TYPE, f"$.{key}")
    try:
        return kind(value)
    except ValueError:
        raise FieldError(Reason.FRAME_INVALID_VALUE, f"$.{key}") from None


def is_hex(value: str, length: int) -> bool:
    """Exactly ``length`` lowercase hexadecimal characters."""
    return len(value) == length and _HEX.issuperset(value)


def get_hex(obj: JsonObject, key: str, length: int) -> str:
    """A lowercase hexadecimal string of an exact length (credentials, tokens, hashes)."""
    value = obj[key]
    if type(value) is not str:
        raise FieldError(Reason.FRAME_WRONG_TYPE, f"$.{key}")
    if not is_hex(value, length):
        raise FieldError(Reason.FRAME_INVALID_VALUE, f"$.{key}")
    return value


def encode_checked(obj: JsonObject, read: Callable[[JsonObject], object]) -> bytes:
    """Encode a frame's JSON object after checking it with the peer's own reader."""
    try:
        read(obj)
    except FieldError as exc:
        error = LocalProtocolError(exc.reason, exc.path)
    else:
        return dumps(obj) + b"\n"
    raise error  # outside the handler: no __context__ that could hold the frame


def decode_checked(data: bytes, read: Callable[[JsonObject], T], max_bytes: int) -> T:
    """Decode one frame (with or without its newline) and read it strictly."""
    if data.endswith(b"\n"):
        data = data[:-1]
    try:
        return read(loads(data, max_bytes))
    except FieldError as exc:
        error = RemoteProtocolError(exc.reason, exc.path)
    # Raised outside the handler, so neither __cause__ nor __context__ chains to an
    # exception (a UnicodeDecodeError, say) that carries the peer's bytes.
    raise error
