"""``@process`` declarations and their discovery (seed 003's ``#[Process]`` attribute).

The decorator only records the raw declaration on the class (``None`` kept distinct from
``False``: ``None`` inherits the task's ``enable_async``, a bool overrides it), so that
importing an application module costs nothing and runs nothing. This module imports no
more than :mod:`.errors` and :mod:`.rules` at the top because every worker imports the
application's modules again, decorators included.

:func:`discover` is the start-time half: it imports only the modules it is given (never
a filesystem scan, which would import arbitrary files), validates every decorated class
before building any, builds each class with ``workers > 0`` once to read its
``enabled`` and ``enable_async``, and registers the enabled ones through the manager's
batch rules. A ``workers=0`` declaration is validated but never built. Nothing executes a
task here. Discovery is atomic like a batch: if any class or name breaks a rule, no
entry of the call is added.
"""

from __future__ import annotations

from coretsia.supervisor.process.errors import (
    AsyncMismatchError,
    ProcessArgumentError,
    ProcessTargetError,
)
from coretsia.supervisor.process.rules import check_flag, check_name, check_worker_num

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import TypeVar, overload

    from coretsia.supervisor.process.manager import ProcessManager

    _C = TypeVar("_C", bound=type)

__all__ = ["DECLARATION_ATTRIBUTE", "Discovered", "ProcessDeclaration", "discover", "process"]

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


def discover(modules: Iterable[str], manager: ProcessManager) -> tuple[Discovered, ...]:
    """Import ``modules``, register their ``@process`` classes on ``manager``.

    Returns every decorated class found (enabled, disabled and ``workers=0`` alike), in
    module order and then definition order; they are also recorded on the manager for
    the generation. A class is found in the module that defines it, never where it is
    merely imported.
    """
    from coretsia.supervisor.process.targets import async_shape, check_class

    manager._check_open()
    declared = _decorated_classes(_import_all(_module_names(modules)))
    # Validate every class before building any: a broken declaration must not leave the
    # constructors of the others run for nothing.
    targets: list[str] = []
    for cls, declaration in declared:
        targets.append(check_class(cls))
        execute = getattr(cls, "execute", None)
        if not callable(execute):
            raise ProcessTargetError("a @process class needs an execute method")
        override = declaration.enable_async
        if override is not None and override != async_shape(execute):
            raise AsyncMismatchError(name=declaration.name)
    found: list[Discovered] = []
    batches = []
    for (cls, declaration), target in zip(declared, targets, strict=True):
        if declaration.workers == 0:
            found.append(Discovered(target, declaration, None))
            continue
        name = declaration.name
        if name is None:
            name = f"{cls.__module__}.{cls.__qualname__}"
        batch = manager._plan(declaration.workers, cls(), declaration.enable_async, name)
        # A disabled task plans zero workers (its workers > 0 was checked above).
        found.append(Discovered(target, declaration, batch.worker_num > 0))
        batches.append(batch)
    manager._commit(batches, found)
    return tuple(found)


def _module_names(modules: Iterable[str]) -> list[str]:
    """Absolute dotted module names only: no paths, no relative names, no lone string."""
    if isinstance(modules, (str, bytes)):
        raise ProcessArgumentError("discovery takes a collection of module names")
    names = list(modules)
    for name in names:
        if not isinstance(name, str) or not all(p.isidentifier() for p in name.split(".")):
            raise ProcessArgumentError("a discovery module must be an absolute dotted name")
    return names


def _import_all(names: list[str]) -> list[object]:
    import importlib

    imported: list[object] = []
    for name in names:
        try:
            imported.append(importlib.import_module(name))
        except Exception as exc:
            raise ProcessTargetError("a discovery module cannot be imported") from exc
    return imported


def _decorated_classes(modules: list[object]) -> list[tuple[type, ProcessDeclaration]]:
    seen: set[int] = set()
    classes: list[tuple[type, ProcessDeclaration]] = []
    for module in modules:
        module_name = getattr(module, "__name__", None)
        for value in list(vars(module).values()):
            if not isinstance(value, type) or id(value) in seen:
                continue
            declaration = declaration_of(value)
            if declaration is not None and value.__module__ == module_name:
                seen.add(id(value))
                classes.append((value, declaration))
    return classes
