"""Discovery of ``@process`` declarations: the start-time half of :mod:`.decorator`.

:func:`discover` imports only the modules it is given (never a filesystem scan, which
would import arbitrary files), validates every decorated class before building any,
builds each class with ``workers > 0`` once to read its ``enabled`` and
``enable_async``, and registers the enabled ones through the registry's batch rules
(:meth:`~.registry.Registry.plan` each, one :meth:`~.registry.Registry.commit`). A
``workers=0`` declaration is validated but never built. Nothing executes a task here.
Discovery is atomic like a batch: if any class or name breaks a rule, no entry of the
call is added.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from coretsia.supervisor.process_entries.decorator import (
    Discovered,
    ProcessDeclaration,
    declaration_of,
)
from coretsia.supervisor.process_entries.errors import (
    AsyncMismatchError,
    ProcessArgumentError,
    ProcessTargetError,
)
from coretsia.supervisor.process_entries.registry import registry_of
from coretsia.supervisor.process_entries.targets import async_shape, check_class

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coretsia.supervisor.process_entries.registry import Registry, RegistryOwner

__all__ = ["discover"]


def discover(modules: Iterable[str], manager: RegistryOwner | Registry) -> tuple[Discovered, ...]:
    """Import ``modules``, register their ``@process`` classes on ``manager``.

    ``manager`` is a ``ProcessManager`` or a bare registry. Returns every decorated class
    found (enabled, disabled and ``workers=0`` alike), in module order
    and then definition order; they are also recorded in the registry for the
    generation. A class is found in the module that defines it, never where it is merely
    imported.
    """
    registry = registry_of(manager)
    registry.check_open()  # before importing anything
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
        batch = registry.plan(declaration.workers, cls(), declaration.enable_async, name)
        # A disabled task plans zero workers (its workers > 0 was checked above).
        found.append(Discovered(target, declaration, batch.worker_num > 0))
        batches.append(batch)
    registry.commit(batches, found)
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
