"""The base of every hand-written frame class: a frozen, slotted dataclass by hand.

The frames decoded on a worker's boot path (the worker channel) and on the probe path
(control answers, the locator: ``status`` is a Kubernetes exec probe) cannot afford
:mod:`dataclasses`, which imports :mod:`inspect` (and with it ``ast``, ``dis``,
``tokenize``): about 10 ms per process for a handful of tiny classes. A subclass stores
its fields in private slots named ``_<field>``, exposes each through a read-only
property, lists them in ``_fields`` (constructor order) and the ones its ``repr`` may
show in ``_shown`` (a secret never is). Equality, hashing, ``repr``, pickling and
``dataclasses.FrozenInstanceError`` on assignment behave as the dataclass did.
"""

from __future__ import annotations

# Not ``from typing import ...``: importing typing costs milliseconds on the boot and
# probe paths; type checkers honour a module-level TYPE_CHECKING all the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar


class Frozen:
    """Immutable, compared and hashed by value; see the module docstring."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _shown: ClassVar[tuple[str, ...]] = ()

    def _set(self, *values: object) -> None:
        """Store the fields, in ``_fields`` order (for ``__init__`` only)."""
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, "_" + name, value)

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Frozen) and other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{self.__class__.__qualname__}({shown})"

    def __reduce__(self) -> tuple[type[Frozen], tuple[object, ...]]:
        return self.__class__, self._values()

    def __setattr__(self, name: str, value: object) -> None:
        raise _frozen(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise _frozen(f"cannot delete field {name!r}")


def _frozen(message: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # only when someone tries to mutate

    return FrozenInstanceError(message)
