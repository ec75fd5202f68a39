"""Strict JSON in and deterministic JSON out, and the kinds of value a field may hold.

Every frame and file of the protocol is decoded by these rules: the control and locator
on the probe path (``status`` is a Kubernetes exec probe), the worker channel in every
worker's boot path, the internal channels in the daemons. They cannot afford cattrs's
imports (docs/performance.md, "Timings the code refers to") and need none: a field's
:class:`Kind` checks the exact JSON type (``True`` is not an ``int``, ``"5"`` is not a
number, a string is not a list) and the range, :func:`check_keys` the exact key set, and
:func:`check_version` runs first, so a frame of a newer version is reported as such
instead of as "unknown key".

Everything here raises :class:`FieldError`; :mod:`._codec` turns it into a
:class:`RemoteProtocolError` when decoding and a :class:`LocalProtocolError` when
encoding, so that what we send is checked by exactly the rules the peer applies.
"""

from __future__ import annotations

import json

from coretsia.worker_protocol.catalogue import Reason

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    import enum
    from typing import Any, ClassVar, Final

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


def require(ok: bool, key: str, reason: Reason = Reason.FRAME_INVALID_VALUE) -> None:
    """A rule between fields: the frame is refused at ``$.key`` unless ``ok``."""
    if not ok:
        raise FieldError(reason, f"$.{key}" if key else "$")


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


def check_keys(
    obj: JsonObject, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> None:
    """Exactly these keys: an unknown one is never named (it is the peer's text)."""
    for key in obj:
        if key not in required and key not in optional:
            raise FieldError(Reason.FRAME_UNKNOWN_KEY)
    for key in sorted(required):
        if key not in obj:
            raise FieldError(Reason.FRAME_MISSING_KEY, f"$.{key}")


def is_hex(value: str, length: int) -> bool:
    """Exactly ``length`` lowercase hexadecimal characters."""
    return len(value) == length and _HEX.issuperset(value)


class Kind:
    """What one field holds, and how it is read from and written to its JSON key.

    Most kinds own one key named after the field and only say how its value is read
    (checked) and written; a kind may own several keys (see :class:`Omissible` and the
    nested records of :mod:`._codec`) by overriding :meth:`keys`, :meth:`load` and
    :meth:`dump`.
    """

    __slots__ = ()
    omissible: ClassVar[bool] = False
    """Whether the key may be left out (it then reads as None)."""

    def keys(self, name: str) -> frozenset[str]:
        """The JSON keys the field ``name`` owns."""
        return frozenset((name,))

    def key_sets(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        """The keys of field ``name`` a frame must carry, and those it may leave out."""
        keys = self.keys(name)
        return (frozenset(), keys) if self.omissible else (keys, frozenset())

    def load(self, obj: JsonObject, name: str) -> object:
        """The checked value of field ``name`` from a frame's object."""
        return self.read(obj[name], f"$.{name}")

    def dump(self, value: object, name: str, obj: JsonObject) -> None:
        """Put field ``name``'s value into a frame's object (checked when read back)."""
        obj[name] = self.write(value, f"$.{name}")

    def read(self, value: object, path: str) -> object:
        """Check one JSON value; what the frame holds."""
        raise NotImplementedError

    def write(self, value: object, path: str) -> object:
        """The JSON value of what the frame holds (most kinds hold JSON already)."""
        return value


class Int(Kind):
    """An integer in ``[lo, hi]`` (None: unbounded); booleans and floats are refused."""

    __slots__ = ("hi", "lo")

    def __init__(self, lo: int | None = None, hi: int | None = None) -> None:
        self.lo = lo
        self.hi = hi

    def read(self, value: object, path: str) -> int:
        if type(value) is not int:
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise FieldError(Reason.FRAME_INVALID_VALUE, path)
        return value


ANY_INT: Final = Int()
"""Any integer (internal frames: their peer is Coretsia itself, of the same version)."""


class Bool(Kind):
    """A JSON boolean, nothing else (``"false"`` and ``0`` are not False)."""

    __slots__ = ()

    def read(self, value: object, path: str) -> bool:
        if type(value) is not bool:
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        return value


class Str(Kind):
    """A string of ``min_len`` to ``max_len`` (None: any) characters that UTF-8 can encode."""

    __slots__ = ("max_len", "min_len")

    def __init__(self, max_len: int | None = 256, *, min_len: int = 1) -> None:
        self.max_len = max_len
        self.min_len = min_len

    def read(self, value: object, path: str) -> str:
        if type(value) is not str:
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            raise FieldError(Reason.FRAME_INVALID_VALUE, path)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape
            raise FieldError(Reason.FRAME_INVALID_VALUE, path) from None
        return value


TEXT: Final = Str(None, min_len=0)
"""Any string UTF-8 can encode, the empty one too (internal frames: bounded by the frame)."""


class Hex(Kind):
    """Lowercase hexadecimal of an exact length (credentials, tokens, hashes)."""

    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        self.length = length

    def read(self, value: object, path: str) -> str:
        if type(value) is not str:
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        if not is_hex(value, self.length):
            raise FieldError(Reason.FRAME_INVALID_VALUE, path)
        return value


class Choice(Kind):
    """One member of a string-valued enum, written as its value."""

    __slots__ = ("members",)

    def __init__(self, members: type[enum.Enum]) -> None:
        self.members = members

    def read(self, value: object, path: str) -> enum.Enum:
        if type(value) is not str:
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        try:
            return self.members(value)
        except ValueError:
            raise FieldError(Reason.FRAME_INVALID_VALUE, path) from None

    def write(self, value: object, path: str) -> object:
        if not isinstance(value, self.members):
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        return value.value


class Nullable(Kind):
    """``null``, or a value of ``kind``: the key is always present."""

    __slots__ = ("kind",)

    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def read(self, value: object, path: str) -> object:
        return None if value is None else self.kind.read(value, path)

    def write(self, value: object, path: str) -> object:
        return None if value is None else self.kind.write(value, path)


class Omissible(Nullable):
    """A key that may be left out, meaning None; present, it holds a value of ``kind``."""

    __slots__ = ()
    omissible = True

    def load(self, obj: JsonObject, name: str) -> object:
        return self.kind.read(obj[name], f"$.{name}") if name in obj else None

    def dump(self, value: object, name: str, obj: JsonObject) -> None:
        if value is not None:
            obj[name] = self.kind.write(value, f"$.{name}")


class Array(Kind):
    """A JSON array of ``item`` values, held as a tuple (a string is not an array)."""

    __slots__ = ("item",)

    def __init__(self, item: Kind) -> None:
        self.item = item

    def read(self, value: object, path: str) -> tuple[object, ...]:
        if type(value) is not list:
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        return tuple([self.item.read(v, f"{path}[{i}]") for i, v in enumerate(value)])

    def write(self, value: object, path: str) -> object:
        if not isinstance(value, tuple):
            raise FieldError(Reason.FRAME_WRONG_TYPE, path)
        return [self.item.write(v, f"{path}[{i}]") for i, v in enumerate(value)]
