"""What a pool entry is: the :class:`Process` protocol and its two adapters.

Seed 003 accepts either a task object (readable ``enabled`` and ``enable_async``, plus
``execute(pool, worker_id)``) or a plain callable ``(pool, worker_id)``. The manager
turns a callable into a :class:`ProcessDefinition`, so that :meth:`ProcessManager.all`
always hands back objects of one shape.

An explicit ``enable_async`` at registration must not change the caller's object (the
same task may be registered twice with different settings), so it is applied through an
:class:`AsyncOverride` wrapper instead; without an override the registered object itself
is kept, and its identity with it.

In Python the async flag is not a preference the way seed 003's coroutine flag is: an
``async def`` entry can only run in an event loop and a plain one only outside it. The
flag is still declared explicitly (it is what the generation records and what the
worker reads), and the manager refuses a flag that contradicts the entry's shape.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Protocol, final

from coretsia.supervisor.process_entries.errors import ProcessArgumentError, ProcessTargetError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "AsyncOverride",
    "Process",
    "ProcessDefinition",
    "effective_async",
    "is_async_callable",
    "is_generator_callable",
]


class Process(Protocol):
    """A typed pool entry (seed 003's ``ProcessInterface``).

    ``pool`` is the worker-side :class:`~coretsia.supervisor.process.WorkerPool` (the
    stop, the shutdown request, the messages); ``worker_id`` is the entry's registration
    index. An ``async def
    execute`` makes an async entry, which needs ``enable_async`` true. The object is
    built in the parent (to register it) and built again, with no arguments, in every
    worker: keep constructors and these properties free of side effects.
    """

    @property
    def enabled(self) -> bool:
        """False skips the entry at registration: it takes no name and no worker id."""
        ...

    @property
    def enable_async(self) -> bool:
        """True if ``execute`` is a coroutine function to run in an event loop."""
        ...

    def execute(self, pool: Any, worker_id: int, /) -> object:
        """The worker's work; returning or raising gets the worker replaced."""
        ...


def is_async_callable(function: object) -> bool:
    """True for an ``async def`` function, or an instance whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        _call_method(function)
    )


def _call_method(function: object) -> object:
    """The class's ``__call__``: what runs when an instance of a callable class is called."""
    try:
        return type(function).__call__
    except AttributeError:
        return None


def is_generator_callable(function: object) -> bool:
    """True for a (sync or async) generator function: calling it runs no code at all."""
    return any(
        check(candidate)
        for candidate in (function, _call_method(function))
        for check in (inspect.isgeneratorfunction, inspect.isasyncgenfunction)
    )


@final
class ProcessDefinition:
    """A callable ``(pool, worker_id)`` adapted to the :class:`Process` protocol.

    ``enable_async`` defaults to the callable's own shape: false for a plain function
    (seed 003's default for callables) and true for an ``async def`` one, the only
    value that could be accepted for it. ``enabled`` defaults to true.
    """

    __slots__ = ("_enable_async", "_enabled", "_function")

    def __init__(
        self,
        function: Callable[[Any, int], object],
        *,
        enable_async: bool | None = None,
        enabled: bool = True,
    ) -> None:
        if isinstance(function, (type, ProcessDefinition, AsyncOverride)) or not callable(function):
            raise ProcessTargetError("a process definition wraps a function or callable")
        if enable_async is not None and type(enable_async) is not bool:
            raise ProcessArgumentError("an async or enabled flag must be a bool")
        if type(enabled) is not bool:
            raise ProcessArgumentError("an async or enabled flag must be a bool")
        self._function = function
        self._enable_async = is_async_callable(function) if enable_async is None else enable_async
        self._enabled = enabled

    @property
    def function(self) -> Callable[[Any, int], object]:
        """The adapted callable, unchanged."""
        return self._function

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def enable_async(self) -> bool:
        return self._enable_async

    def execute(self, pool: Any, worker_id: int, /) -> object:
        """Call the adapted callable (its coroutine, for an async one, is returned)."""
        return self._function(pool, worker_id)

    def __repr__(self) -> str:
        return f"ProcessDefinition(enable_async={self._enable_async}, enabled={self._enabled})"


@final
class AsyncOverride:
    """A registered task seen through an explicit ``enable_async`` override.

    Reads ``enabled`` from the task and delegates ``execute`` to it; only the flag
    differs. The original stays reachable as :attr:`task` and is never modified.
    """

    __slots__ = ("_enable_async", "_task")

    def __init__(self, task: Process, enable_async: bool) -> None:
        if isinstance(task, AsyncOverride):
            task = task.task
        if type(enable_async) is not bool:
            raise ProcessArgumentError("an async or enabled flag must be a bool")
        self._task = task
        self._enable_async = enable_async

    @property
    def task(self) -> Process:
        """The task as it was registered."""
        return self._task

    @property
    def enabled(self) -> bool:
        return self._task.enabled

    @property
    def enable_async(self) -> bool:
        return self._enable_async

    def execute(self, pool: Any, worker_id: int, /) -> object:
        """Delegate to the task (its coroutine, for an async one, is returned)."""
        return self._task.execute(pool, worker_id)

    def __repr__(self) -> str:
        return f"AsyncOverride({self._task!r}, enable_async={self._enable_async})"


def effective_async(override: bool | None, own: bool) -> bool:
    """Seed 003's inheritance table: ``None`` inherits the task's flag, a bool wins.

    ========  =====================  ====================
    override  task flag false        task flag true
    ========  =====================  ====================
    None      direct (False)         async (True)
    False     direct (False)         direct (False)
    True      async (True)           async (True)
    ========  =====================  ====================
    """
    return own if override is None else override
