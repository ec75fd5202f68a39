"""One strict cattrs converter for every internal frame.

Out of the box cattrs coerces primitives by calling the type: ``"false"`` becomes ``True``
and ``5.9`` becomes ``5``. The hooks below accept only the exact JSON type, so internal
frames are held to the same strictness as the hand-written public codec, and every
failure surfaces as one :class:`RemoteProtocolError` that echoes no value.
"""

from __future__ import annotations

import json
import typing
from typing import Any, Final, TypeVar

import cattrs
from cattrs.preconf.json import make_converter
from cattrs.strategies import configure_tagged_union

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES

T = TypeVar("T")


def _exact(kind: type[Any]) -> Any:
    def hook(value: Any, target: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(kind.__name__)
        if kind is str:
            # A lone surrogate (from a ``\ud800`` escape) decodes but could never be
            # encoded again: refuse it as the public codec does (UnicodeEncodeError is a
            # ValueError, reported as worker-frame-invalid-value).
            value.encode("utf-8")
        # The same hook serves subclasses such as ``str``-based enums (cattrs dispatches
        # by class): build the member, which rejects an unknown value.
        return value if target is kind else target(value)

    return hook


def _float(value: Any, _type: Any) -> float:
    # JSON has one number type; an integer is a fine float, a boolean is not.
    if type(value) is float or type(value) is int:
        return float(value)
    raise TypeError("float")


def make_strict_converter() -> cattrs.Converter:
    """A JSON converter that forbids extra keys and coerces nothing."""
    conv = make_converter(forbid_extra_keys=True)
    for kind in (str, int, bool):
        conv.register_structure_hook(kind, _exact(kind))
    conv.register_structure_hook(float, _float)

    def is_variadic_tuple(target: Any) -> bool:
        args = typing.get_args(target)
        return typing.get_origin(target) is tuple and len(args) == 2 and args[1] is ...

    def variadic_tuple(value: Any, target: Any) -> tuple[Any, ...]:
        # cattrs would happily iterate a string into a tuple of characters.
        if type(value) is not list:
            raise TypeError("list")
        item = typing.get_args(target)[0]
        return tuple(conv.structure(v, item) for v in value)

    conv.register_structure_hook_func(is_variadic_tuple, variadic_tuple)
    return conv


def _tag(cls: type) -> str:
    tag: str = cls.__dict__["TAG"]
    return tag


def tagged_union(conv: cattrs.Converter, union: Any) -> None:
    """Register ``union`` with a ``type`` tag taken from each class's ``TAG``."""
    configure_tagged_union(union, conv, tag_generator=_tag, tag_name="type")


_ERRORS: Final = (cattrs.BaseValidationError, KeyError, TypeError, ValueError, AttributeError)


def encode(conv: cattrs.Converter, union: Any, frame: Any) -> bytes:
    """Encode one frame line; a frame that would not decode is a LocalProtocolError."""
    try:
        # dumps raises ValueError (NaN, a lone surrogate) or TypeError (an object JSON
        # cannot hold) for frames built with the wrong Python types.
        data = s.dumps(conv.unstructure(frame, union))
        conv.structure(json.loads(data), union)
    except _ERRORS:
        failed = True
    else:
        failed = False
    if failed:
        raise LocalProtocolError(Reason.FRAME_INVALID_VALUE)
    if len(data) > MAX_FRAME_BYTES:
        # The peer would refuse it as oversized; say so here, where the bug is.
        raise LocalProtocolError(Reason.FRAME_OVERSIZED)
    return data + b"\n"


def decode(conv: cattrs.Converter, union: Any, line: bytes, version: int) -> Any:
    """Decode one frame line strictly; every failure is one RemoteProtocolError.

    The error is raised outside any handler so that it chains to nothing: the exceptions
    of json and cattrs quote the peer's bytes.
    """
    if line.endswith(b"\n"):
        line = line[:-1]
    try:
        obj = s.loads(line, MAX_FRAME_BYTES)
        s.check_version(obj, version)
    except s.FieldError as exc:
        error = RemoteProtocolError(exc.reason, exc.path)
    else:
        if "type" not in obj:
            raise RemoteProtocolError(Reason.FRAME_MISSING_KEY, "$.type")
        try:
            return conv.structure(obj, union)
        except cattrs.ForbiddenExtraKeysError:
            error = RemoteProtocolError(Reason.FRAME_UNKNOWN_KEY)
        except cattrs.BaseValidationError as exc:
            error = RemoteProtocolError(_reason_of(exc))
        except KeyError:
            error = RemoteProtocolError(Reason.FRAME_UNKNOWN_TYPE, "$.type")
        except (TypeError, ValueError, AttributeError):
            error = RemoteProtocolError(Reason.FRAME_INVALID_VALUE)
    raise error


def _reason_of(exc: cattrs.BaseValidationError) -> Reason:
    """Name the first cause by its kind only; its message may quote the peer's value."""
    leaves: list[BaseException] = []

    def walk(group: BaseException) -> None:
        if isinstance(group, cattrs.BaseValidationError):
            for inner in group.exceptions:
                walk(inner)
        else:
            leaves.append(group)

    walk(exc)
    first = leaves[0] if leaves else exc
    if isinstance(first, cattrs.ForbiddenExtraKeysError):
        return Reason.FRAME_UNKNOWN_KEY
    if isinstance(first, KeyError):
        return Reason.FRAME_MISSING_KEY
    if isinstance(first, TypeError):
        return Reason.FRAME_WRONG_TYPE
    return Reason.FRAME_INVALID_VALUE
