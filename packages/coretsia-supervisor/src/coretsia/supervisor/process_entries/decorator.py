"""``@process`` declarations (seed 003's ``#[Process]`` attribute).

The decorator only records the raw declaration on the class (``None`` kept distinct from
``False``: ``None`` inherits the task's ``enable_async``, a bool overrides it), so that
importing an application module costs nothing and runs nothing. This module imports no
more than :mod:`.errors` and :mod:`.rules` because every worker imports the
application's modules again, decorators included. Finding and registering the
declarations at start is :mod:`.discovery`'s.
"""

from __future__ import annotations

from coretsia.supervisor.process_entries.errors import ProcessTargetError
from coretsia.supervisor.process_entries.rules import check_flag, check_name, check_worker_num

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar, overload

    _C = TypeVar("_C", bound=type)

__all__ = [
    "DECLARATION_ATTRIBUTE",
    "Discovered",
    "ProcessDeclaration",
    "declaration_of",
    "process",
]

DECLARATION_ATTRIBUTE = "__coretsia_process__"
"""Where ``@process`` stores its :class:`ProcessDeclaration` (in the class's own dict)."""


class ProcessDeclaration:
    """The raw arguments of one ``@process`` decorator, validated but not interpreted."""

    __slots__ = ("enable_async", "name", "workers")

    def __init__(
        self, name: str | None = None, workers: int = 1, enable_async: bool | None = None
    ) -> None:
        self.name: str | None = None if name is None else check_name(name)
        self.workers: int = check_worker_num(workers)
        self.enable_async: bool | None = check_flag(enable_async, optional=True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProcessDeclaration):
            return NotImplemented
        return (self.name, self.workers, self.enable_async) == (
            other.name,
            other.workers,
            other.enable_async,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.workers, self.enable_async))

    def __repr__(self) -> str:
        return f"ProcessDeclaration(workers={self.workers}, enable_async={self.enable_async})"


class Discovered:
    """One decorated class as discovery found it: its address, declaration and ``enabled``.

    ``enabled`` is ``None`` for a ``workers=0`` declaration, which is never built.
    """

    __slots__ = ("declaration", "enabled", "target")

    def __init__(self, target: str, declaration: ProcessDeclaration, enabled: bool | None) -> None:
        self.target = target
        self.declaration = declaration
        self.enabled = enabled

    def __repr__(self) -> str:
        return f"Discovered({self.declaration!r}, enabled={self.enabled})"


if TYPE_CHECKING:  # the overloads need typing, which a worker need not import

    @overload
    def process(name: _C, /) -> _C: ...

    @overload
    def process(
        name: str | None = None, workers: int = 1, enable_async: bool | None = None
    ) -> Callable[[_C], _C]: ...


def process(name: object = None, workers: int = 1, enable_async: bool | None = None) -> object:
    """Declare a :class:`Process` class as a pool entry: ``@process`` or ``@process(...)``.

    ``name`` ``None`` means the class's fully qualified name (``module.Qualname``);
    ``workers`` is the batch size (0 declares the class but adds no worker);
    ``enable_async`` ``None`` inherits the task's own flag.
    """
    if isinstance(name, type):
        return _declare(name, ProcessDeclaration())
    declaration = ProcessDeclaration(name, workers, enable_async)  # type: ignore[arg-type]

    def decorate(cls: _C) -> _C:
        return _declare(cls, declaration)

    return decorate


def _declare(cls: _C, declaration: ProcessDeclaration) -> _C:
    if not isinstance(cls, type):
        raise ProcessTargetError("@process decorates a class")
    if DECLARATION_ATTRIBUTE in vars(cls):
        raise ProcessTargetError("a class carries one @process declaration")
    setattr(cls, DECLARATION_ATTRIBUTE, declaration)
    return cls


def declaration_of(cls: type) -> ProcessDeclaration | None:
    """The class's own declaration; a subclass does not inherit its parent's."""
    found = vars(cls).get(DECLARATION_ATTRIBUTE)
    return found if isinstance(found, ProcessDeclaration) else None
