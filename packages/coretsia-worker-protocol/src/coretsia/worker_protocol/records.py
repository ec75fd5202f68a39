"""The plain base of the records on the start-up paths: frozen, slotted value classes.

Every other record is an attrs class; this base is for the ones a worker's boot or the
status probe import, where attrs would cost a budget's worth (measured in
``docs/performance.md``, "Records: attrs off the start-up paths"; enforced by
``tests/test_record_style.py``): every frame of the protocol (public and internal: one
family, one codec), the state, locator and generation files, the generation's process
snapshot and the queue sources' messages. Each field is declared once::

    class Ready(Frame):
        token: str | None = field(default=None, secret=True, kind=Nullable(Hex(64)))

The metaclass reads the class annotations (names and defaults only: under ``from
__future__ import annotations`` they stay strings and are never evaluated) and gives the
class ``__slots__`` named after its fields, so reading a field is a plain slot access.
The base supplies the constructor (positional and keyword, or keyword-only with
``kw_only=True``), equality and hashing by value, a ``repr`` that never shows a field
marked ``secret``, ``__match_args__``, pickling, and ``dataclasses.FrozenInstanceError``
on assignment.

Why not :mod:`dataclasses` or attrs: ``dataclasses`` imports :mod:`inspect` (with
``ast``, ``dis`` and ``tokenize``), attrs more (see the measurement above). This module
imports nothing at all; type checkers learn the constructors from
:func:`typing.dataclass_transform`.

Not re-exported from the package and without a stability promise: it is the shared base
of Coretsia's own distributions, not an API for third parties.
"""

from __future__ import annotations

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    import sys
    from collections.abc import Callable, Iterable
    from typing import Any, ClassVar, TypeVar

    if sys.version_info >= (3, 11):
        from typing import dataclass_transform
    else:  # declared for Python 3.10 only, and only type checkers import it
        from typing_extensions import dataclass_transform

    _C = TypeVar("_C")
    _R = TypeVar("_R", bound="Frozen")
else:

    def dataclass_transform(**_kwargs: object) -> Callable[[_C], _C]:
        """A no-op at run time: only type checkers read the transform."""
        return lambda cls: cls


class _Missing:
    """The default of a field that has none (``None`` is a real default)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<no default>"


MISSING: Any = _Missing()


class Field:
    """What :func:`field` declares about one field, beyond its name and annotation.

    ``kind`` says how the field travels as JSON (a :class:`._strict.Kind`, read by
    :mod:`._codec`); records that never travel leave it None.
    """

    __slots__ = ("default", "kind", "secret")

    def __init__(self, default: object, secret: bool, kind: object) -> None:
        self.default = default
        self.secret = secret
        self.kind = kind


def field(*, default: Any = MISSING, secret: bool = False, kind: object = None) -> Any:
    """Declare a field's default, whether ``repr`` hides it, and its wire ``kind``."""
    return Field(default, secret, kind)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class RecordMeta(type):
    """Builds ``__slots__`` from the annotations before the class exists (it must)."""

    def __new__(
        mcs,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        *,
        kw_only: bool = False,
    ) -> RecordMeta:
        inherited: dict[str, Field] = {}
        for base in reversed(bases):
            inherited.update(getattr(base, "_specs", {}))
        own: dict[str, Field] = {}
        for key, annotation in namespace.get("__annotations__", {}).items():
            if not str(annotation).startswith(("ClassVar", "typing.ClassVar")):
                declared = namespace.pop(key, MISSING)
                own[key] = declared if isinstance(declared, Field) else field(default=declared)
        fields = {**inherited, **own}
        namespace["__slots__"] = tuple(own)
        namespace["_specs"] = fields
        namespace["_names"] = tuple(fields)
        namespace["_shown"] = tuple(key for key, spec in fields.items() if not spec.secret)
        namespace["_positional"] = 0 if kw_only else len(fields)
        namespace["__match_args__"] = () if kw_only else tuple(fields)
        if not kw_only:
            _check_default_order(name, fields)
        return super().__new__(mcs, name, bases, namespace)


def _check_default_order(name: str, fields: dict[str, Field]) -> None:
    seen_default = False
    for key, spec in fields.items():
        if spec.default is not MISSING:
            seen_default = True
        elif seen_default:
            msg = f"{name}: field {key!r} without a default follows one with a default"
            raise TypeError(msg)


class Frozen(metaclass=RecordMeta):
    """Immutable, compared and hashed by value; see the module docstring."""

    __slots__ = ()
    _specs: ClassVar[dict[str, Field]]
    _names: ClassVar[tuple[str, ...]]
    _shown: ClassVar[tuple[str, ...]]
    _positional: ClassVar[int]

    def __init__(self, *args: object, **kwargs: object) -> None:
        names = self._names
        if len(args) > self._positional:
            msg = f"{type(self).__name__}() takes {self._positional} positional arguments"
            raise TypeError(msg)
        for key, value in zip(names, args, strict=False):  # the rest come by keyword
            if key in kwargs:
                msg = f"{type(self).__name__}() got multiple values for {key!r}"
                raise TypeError(msg)
            object.__setattr__(self, key, value)
        fields = self._specs
        for key in names[len(args) :]:
            value = kwargs.pop(key, fields[key].default)
            if value is MISSING:
                msg = f"{type(self).__name__}() missing argument {key!r}"
                raise TypeError(msg)
            object.__setattr__(self, key, value)
        if kwargs:
            unexpected = next(iter(kwargs))
            msg = f"{type(self).__name__}() got an unexpected keyword argument {unexpected!r}"
            raise TypeError(msg)

    @classmethod
    def _of(cls: type[_R], values: Iterable[object]) -> _R:
        """A record of already checked values, in field order (for decoders)."""
        record = cls.__new__(cls)
        record.__setstate__(tuple(values))
        return record

    def _values(self) -> tuple[object, ...]:
        return tuple([getattr(self, key) for key in self._names])

    def _asdict(self) -> dict[str, object]:
        """The fields by name, in declaration order (as a namedtuple's ``_asdict``)."""
        return dict(zip(self._names, self._values(), strict=True))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Frozen) and other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={getattr(self, key)!r}" for key in self._shown)
        return f"{self.__class__.__qualname__}({shown})"

    def __getstate__(self) -> tuple[object, ...]:
        return self._values()

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for key, value in zip(self._names, state, strict=True):
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise _frozen(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise _frozen(f"cannot delete field {name!r}")


def _frozen(message: str) -> AttributeError:
    from dataclasses import (
        FrozenInstanceError,  # start-up budget: docs/performance.md#start-up-import-rules
    )

    return FrozenInstanceError(message)
