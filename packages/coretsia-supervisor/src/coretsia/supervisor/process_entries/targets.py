"""Where an entry lives: its ``module:qualname`` address and how a worker rebuilds it.

Every worker is a fresh interpreter (architecture, "fresh boot per spawn"): nothing is
pickled or inherited from the parent, so a worker can only run what it can import again.
The manager therefore records, for each entry, an address and a kind:

* ``function``: the address is a module-level function (or a class's classmethod or
  staticmethod); the worker calls it with ``(pool, worker_id)``.
* ``process``: the address is a module-level class following the :class:`Process`
  protocol; the worker builds it with no arguments and calls ``execute``.
* ``callable``: the address is a module-level class whose instances are callable; the
  worker builds it with no arguments and calls the instance.

Anything without such an address is refused at registration, with a sentence saying
which rule it breaks: a lambda, a closure, a nested function or class, a bound method of
an instance, an instance whose class needs constructor arguments. The address is checked
by resolving it here and comparing with the registered object, which also catches a
module attribute that was reassigned or wrapped after the fact.

An entry defined in the main script is recorded as ``__main__:qualname``; the runtime
imports the script again in each worker the way multiprocessing's spawn mode does (by
``__spec__.name`` under ``-m``, else by ``__file__``), so a script without either
(``python -c``, an interactive session) cannot host entries.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from types import MethodType, ModuleType

from coretsia.supervisor.process_entries.definition import (
    AsyncOverride,
    ProcessDefinition,
    is_async_callable,
    is_generator_callable,
)
from coretsia.supervisor.process_entries.errors import ProcessTargetError
from coretsia.supervisor.process_entries.rules import KIND_CALLABLE, KIND_FUNCTION, KIND_PROCESS

__all__ = [
    "async_shape",
    "check_class",
    "describe",
    "is_process",
    "target_of",
]

_MAIN = "__main__"


def target_of(task: object) -> str:
    """The ``module:qualname`` a worker imports to re-create ``task``.

    ``task`` is a registered entry (as :meth:`ProcessManager.get` returns it) or anything
    :meth:`ProcessManager.add` accepts. Raises :class:`ProcessTargetError` if it cannot
    be re-created in a worker.
    """
    return describe(task)[0]


def describe(task: object) -> tuple[str, str]:
    """``(address, kind)`` of ``task``; the adapters are looked through."""
    if isinstance(task, AsyncOverride):
        return describe(task.task)
    if isinstance(task, ProcessDefinition):
        return _describe_callable(task.function)
    if isinstance(task, type):
        raise ProcessTargetError("a class was given where an instance or a function belongs")
    if is_process(task):
        return check_class(type(task)), KIND_PROCESS
    if callable(task):
        return _describe_callable(task)
    raise ProcessTargetError("the entry is neither a Process nor a callable")


def is_process(task: object) -> bool:
    """Whether ``task`` presents itself as a :class:`Process` (it has an ``execute``)."""
    return not isinstance(task, type) and callable(getattr(task, "execute", None))


def async_shape(task: object) -> bool:
    """Whether the code the worker will run is a coroutine function.

    Generator functions are refused: calling one only creates a generator, so the entry
    would return at once and be replaced forever.
    """
    if isinstance(task, AsyncOverride):
        return async_shape(task.task)
    function = task.function if isinstance(task, ProcessDefinition) else task
    if is_process(function):
        function = getattr(function, "execute", None)
    if is_generator_callable(function):
        raise ProcessTargetError("a generator function cannot be a process entry")
    return is_async_callable(function)


def check_class(cls: type) -> str:
    """The address of ``cls`` if a worker can import it and build it with no arguments."""
    qualname = cls.__qualname__
    if "<locals>" in qualname:
        raise ProcessTargetError("a class defined inside a function cannot be re-created")
    address = _address(cls, cls.__module__, qualname)
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        raise ProcessTargetError(
            "the entry's class has no inspectable constructor to build it with no arguments"
        ) from None
    try:
        signature.bind()
    except TypeError:
        raise ProcessTargetError(
            "the entry's class needs constructor arguments, but a worker builds it with none"
        ) from None
    return address


def _describe_callable(function: object) -> tuple[str, str]:
    """``(address, kind)`` of a callable that is not a :class:`Process`."""
    if isinstance(function, type):
        raise ProcessTargetError("a class was given where an instance or a function belongs")
    owner = getattr(function, "__self__", None)
    # A classmethod reached through its class (``__self__`` is a class) is re-created
    # through that class; any other ``__self__`` is an instance nobody can rebuild.
    if owner is not None and not isinstance(owner, (ModuleType, type)):
        raise ProcessTargetError("a bound method of an instance cannot be re-created in a worker")
    qualname = getattr(function, "__qualname__", None)
    module = getattr(function, "__module__", None)
    if not isinstance(qualname, str):
        # An instance of a class with ``__call__``: the worker builds a fresh one.
        return check_class(type(function)), KIND_CALLABLE
    if "<lambda>" in qualname:
        raise ProcessTargetError("a lambda cannot be re-created in a worker")
    if "<locals>" in qualname:
        if getattr(function, "__closure__", None):
            raise ProcessTargetError("a closure cannot be re-created in a worker")
        raise ProcessTargetError("a nested function cannot be re-created in a worker")
    if not isinstance(module, str):
        raise ProcessTargetError("the entry has no module a worker could import")
    return _address(function, module, qualname), KIND_FUNCTION


def _address(obj: object, module_name: str, qualname: str) -> str:
    """``module:qualname`` after checking that it leads back to ``obj``."""
    parts = qualname.split(".")
    if not all(part.isidentifier() for part in parts):
        raise ProcessTargetError("the entry has no importable qualified name")
    resolved: object = _module(module_name)
    for part in parts:
        try:
            resolved = getattr(resolved, part)
        except AttributeError:
            raise ProcessTargetError(
                "the entry is not reachable through its module and qualified name"
            ) from None
    same = resolved is obj or (isinstance(obj, MethodType) and resolved == obj)
    if not same:
        raise ProcessTargetError(
            "the entry's module and qualified name lead to another object "
            "(was it wrapped or reassigned?)"
        )
    return f"{module_name}:{qualname}"


def _module(name: str) -> ModuleType:
    """The module a worker would import for ``name`` (imported here if it is not yet)."""
    if name == _MAIN:
        main = sys.modules.get(_MAIN)
        if main is None or not _main_is_reimportable(main):
            raise ProcessTargetError(
                "an entry of a script without a file (python -c, an interactive session) "
                "cannot be re-imported by a worker"
            )
        return main
    module = sys.modules.get(name)
    if module is not None:
        return module
    if not all(part.isidentifier() for part in name.split(".")):
        raise ProcessTargetError("the entry's module has no importable name")
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise ProcessTargetError("the entry's module cannot be imported") from exc


def _main_is_reimportable(main: ModuleType) -> bool:
    """multiprocessing's spawn rule: the main module has a spec name or a real file.

    ``python -`` reports ``__file__`` as ``<stdin>``, which no worker could read again,
    hence the check that the file exists.
    """
    spec = getattr(main, "__spec__", None)
    if spec is not None and isinstance(getattr(spec, "name", None), str):
        return True
    path = getattr(main, "__file__", None)
    return isinstance(path, str) and os.path.isfile(path)
