"""The registry of a named pool: seed 003's ``ProcessManager`` contract in Python names.

This module holds registration and the pool-wide settings only; the pool runtime
(``start`` and ``stop``, on the supervisor, guardian and launcher) is built on top of it
and calls :meth:`ProcessManager._close_registration` at its first start attempt.

Rules, as seed 003 states them:

* every registered worker is one entry with a unique, case-sensitive name; an unnamed
  entry is named by its zero-based registration index, which is also its worker id
  (disabled entries take neither);
* a named batch of several workers expands to ``name:0``, ``name:1``, ...; a batch of
  one keeps ``name``; a batch of zero adds nothing;
* at most 1,024 workers in total, and a batch is atomic: if any of its names collides or
  it would pass the limit, nothing of it is added;
* registration and settings close at the first start attempt.

Every registration is validated whole before anything changes: the entry must be
re-creatable in a worker (:mod:`.targets`) and its effective async flag must match its
shape (:func:`.definition.effective_async`), even for a batch of zero or a disabled
entry, so that enabling it later cannot reveal an old mistake.
"""

from __future__ import annotations

import os
from typing import Any, final

from coretsia.supervisor.process.definition import (
    AsyncOverride,
    Process,
    ProcessDefinition,
    effective_async,
)
from coretsia.supervisor.process.errors import (
    AsyncMismatchError,
    DuplicateProcessNameError,
    ProcessLimitExceededError,
    ProcessNotFoundError,
    ProcessTargetError,
    RegistrationClosedError,
)
from coretsia.supervisor.process.rules import (
    IPC_NONE,
    MAX_WORKERS,
    check_flag,
    check_ipc_type,
    check_msg_queue_key,
    check_name,
    check_worker_num,
)
from coretsia.supervisor.process.targets import async_shape, describe, is_process

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from coretsia.supervisor.process.decorator import Discovered

__all__ = ["ProcessEntry", "ProcessManager"]


@final
class ProcessEntry:
    """One registered worker: its name and id, the effective task and how to rebuild it.

    ``task`` is what :meth:`ProcessManager.get` returns; ``target`` and ``kind`` are the
    address and kind of :mod:`.targets`; ``enable_async`` is the effective flag. Read-only:
    :meth:`ProcessManager.entries` hands out the registry's own records.
    """

    __slots__ = ("enable_async", "kind", "name", "target", "task", "worker_id")
    name: str
    worker_id: int
    task: Process
    target: str
    kind: str
    enable_async: bool

    def __init__(
        self,
        name: str,
        worker_id: int,
        task: Process,
        target: str,
        kind: str,
        enable_async: bool,
    ) -> None:
        for slot, value in (
            ("name", name),
            ("worker_id", worker_id),
            ("task", task),
            ("target", target),
            ("kind", kind),
            ("enable_async", enable_async),
        ):
            object.__setattr__(self, slot, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(name)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"ProcessEntry(worker_id={self.worker_id}, kind={self.kind!r})"


@final
class _Batch:
    """A validated registration waiting to be committed: nothing here has names yet."""

    __slots__ = ("enable_async", "kind", "name", "target", "task", "worker_num")

    def __init__(
        self,
        worker_num: int,
        task: Process,
        name: str | None,
        target: str,
        kind: str,
        enable_async: bool,
    ) -> None:
        self.worker_num = worker_num
        self.task = task
        self.name = name
        self.target = target
        self.kind = kind
        self.enable_async = enable_async


@final
class ProcessManager:
    """A named pool's registry: entries by name, in worker-id order, plus pool-wide IPC.

    ``ipc_type`` is one of ``none`` (default), ``unixsock`` and ``msgqueue``; ``socket``
    is refused (seed 003: it needs a listen step this contract does not have).
    ``msg_queue_key`` is the System V key for ``msgqueue``, 0 for a private queue.
    ``root`` is the project root whose ``coretsia.toml`` and ``var/`` the pool uses (the
    working directory by default). Not thread-safe: register from one thread, before the
    pool starts; :meth:`stop` is the one method for any thread.
    """

    def __init__(
        self,
        ipc_type: str = IPC_NONE,
        msg_queue_key: int = 0,
        *,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        self._ipc_type = check_ipc_type(ipc_type)
        self._msg_queue_key = check_msg_queue_key(msg_queue_key)
        self._entries: dict[str, ProcessEntry] = {}
        self._discovered: tuple[Discovered, ...] = ()
        self._closed = False
        from coretsia.supervisor.process.lifecycle import Runtime

        self._runtime = Runtime(root)

    # -- registration ---------------------------------------------------------------

    def add(
        self,
        process: Process | Callable[[Any, int], object],
        enable_async: bool | None = None,
        name: str | None = None,
    ) -> ProcessManager:
        """Register one worker running ``process``; return this manager.

        ``process`` is a :class:`Process` or a callable ``(pool, worker_id)``, adapted to
        a :class:`ProcessDefinition`. ``enable_async`` ``None`` inherits the task's flag;
        a bool overrides it without touching the task. A disabled task is skipped.
        """
        return self.add_batch(1, process, enable_async, name)

    def add_batch(
        self,
        worker_num: int,
        process: Process | Callable[[Any, int], object],
        enable_async: bool | None = None,
        name: str | None = None,
    ) -> ProcessManager:
        """Register ``worker_num`` workers running ``process``, all or none; return self.

        Named: ``name`` for one worker, ``name:0`` ... ``name:N-1`` for several.
        Unnamed: each worker is named by its worker id. Zero workers is a no-op.
        """
        self._commit([self._plan(worker_num, process, enable_async, name)])
        return self

    def _plan(
        self,
        worker_num: object,
        process: object,
        enable_async: object,
        name: object,
    ) -> _Batch:
        """Validate one registration completely, without changing the manager."""
        self._check_open()
        count = check_worker_num(worker_num)
        override = check_flag(enable_async, optional=True)
        explicit = None if name is None else check_name(name)
        if isinstance(process, (ProcessDefinition, AsyncOverride)) or is_process(process):
            task: Any = process
        elif callable(process) and not isinstance(process, type):
            task = ProcessDefinition(process)
        else:
            task = process  # describe() explains what is wrong with it
        target, kind = describe(task)
        own = _flag(task, "enable_async")
        enabled = _flag(task, "enabled")
        effective = effective_async(override, own)
        if effective != async_shape(task):
            raise AsyncMismatchError(name=explicit)
        if override is not None:
            task = (
                ProcessDefinition(task.function, enable_async=override, enabled=enabled)
                if isinstance(task, ProcessDefinition) and task is not process
                else AsyncOverride(task, override)
            )
        return _Batch(count if enabled else 0, task, explicit, target, kind, effective)

    def _commit(self, batches: Iterable[_Batch], discovered: Iterable[Discovered] = ()) -> None:
        """Name and add every worker of ``batches``, or nothing if any rule breaks.

        ``discovered`` are the decorator declarations behind ``batches`` (from
        :func:`.decorator.discover`), recorded with them for the generation.
        """
        self._check_open()
        worker_id = len(self._entries)
        added: dict[str, ProcessEntry] = {}
        for batch in batches:
            for index in range(batch.worker_num):
                if batch.name is None:
                    name = str(worker_id)
                elif batch.worker_num == 1:
                    name = batch.name
                else:
                    name = f"{batch.name}:{index}"
                if name in self._entries or name in added:
                    raise DuplicateProcessNameError(name=name)
                if worker_id >= MAX_WORKERS:
                    raise ProcessLimitExceededError
                added[name] = ProcessEntry(
                    name, worker_id, batch.task, batch.target, batch.kind, batch.enable_async
                )
                worker_id += 1
        self._entries.update(added)
        self._discovered += tuple(discovered)

    # -- queries --------------------------------------------------------------------

    def all(self) -> dict[str, Process]:
        """Every registered (effective) task keyed by name, in worker-id order (a copy)."""
        return {name: entry.task for name, entry in self._entries.items()}

    def has(self, name: str) -> bool:
        """Whether ``name`` is registered; nothing about whether its worker is alive."""
        return isinstance(name, str) and name in self._entries

    def get(self, name: str) -> Process:
        """The registered task named ``name``: the same object on every lookup."""
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            raise ProcessNotFoundError(name=name)
        return entry.task

    def entries(self) -> tuple[ProcessEntry, ...]:
        """Every registered worker in worker-id order, with its address (for the runtime)."""
        return tuple(self._entries.values())

    def discovered(self) -> tuple[Discovered, ...]:
        """The ``@process`` declarations :func:`.decorator.discover` found, in order."""
        return self._discovered

    # -- pool-wide settings ---------------------------------------------------------

    def set_ipc_type(self, ipc_type: str) -> ProcessManager:
        """Set the IPC mode every worker shares; return this manager."""
        self._check_open()
        self._ipc_type = check_ipc_type(ipc_type)
        return self

    def get_ipc_type(self) -> str:
        """The IPC mode: ``none``, ``unixsock`` or ``msgqueue``."""
        return self._ipc_type

    def set_msg_queue_key(self, msg_queue_key: int) -> ProcessManager:
        """Set the System V message-queue key (0: a private queue); return this manager."""
        self._check_open()
        self._msg_queue_key = check_msg_queue_key(msg_queue_key)
        return self

    def get_msg_queue_key(self) -> int:
        """The System V message-queue key (0: a private queue)."""
        return self._msg_queue_key

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Run the pool in the foreground; return once it stopped and every worker is reaped.

        Refused outside the creating process, off the main thread, inside a running
        event loop (``worker-signal-handling-unavailable``) and inside a managed worker
        (:class:`NestedPoolError`); an empty or stopped registry starts nothing. A pool
        that fails raises its :class:`~coretsia.worker_protocol.exceptions.WorkerError`
        after its shutdown. See :mod:`.lifecycle`.
        """
        self._runtime.start(self)

    def stop(self) -> ProcessManager:
        """Stop the whole pool: from the parent, another thread, or inside a worker.

        In a worker it asks the supervisor over the worker's channel; before ``start`` it
        cancels the registry (``start`` will start nothing); after the pool ended it does
        nothing. Returns at once; ``start`` returns when the pool is down.
        """
        self._runtime.stop()
        return self

    @property
    def closed(self) -> bool:
        """True once a start has been attempted: registration and settings are frozen."""
        return self._closed

    def _close_registration(self) -> None:
        """Freeze registration and settings; the runtime's start calls this first.

        Seed 003 closes them on the first start *attempt*, so a start that fails still
        leaves them closed. Idempotent.
        """
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RegistrationClosedError


def _flag(task: object, attribute: str) -> bool:
    """Read ``enabled`` or ``enable_async``, which the Process protocol says are bools."""
    try:
        value = getattr(task, attribute)
    except AttributeError:
        raise ProcessTargetError(
            "a process entry needs readable enabled and enable_async flags"
        ) from None
    if type(value) is not bool:
        raise ProcessTargetError("a process entry's enabled and enable_async must be bools")
    return value
