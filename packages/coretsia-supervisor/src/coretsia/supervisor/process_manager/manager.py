"""Seed 003's ``ProcessManager`` in Python names: a :class:`Registry` that runs.

The manager is the application's handle on a named pool. Registration, its rules and
its closing belong to the registry it holds
(:mod:`coretsia.supervisor.process_entries.registry`); the pool runtime (``start`` and
``stop``, on the supervisor, guardian and launcher) is :mod:`.lifecycle`,
which closes the registry at its first start attempt. What is left here is seed 003's
API (:class:`~.interface.ProcessManagerInterface`): chaining setters, the lookups by name,
and the two lifecycle calls; plus :meth:`ProcessManager.running`, the pool mounted in a
host's event loop (:mod:`.mounted`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, final

from coretsia.supervisor.process_entries.errors import ProcessNotFoundError
from coretsia.supervisor.process_entries.registry import Registry
from coretsia.supervisor.process_entries.rules import IPC_NONE
from coretsia.supervisor.process_manager.lifecycle import Runtime

if TYPE_CHECKING:
    from collections.abc import Callable

    from coretsia.supervisor.process_entries.decorator import Discovered
    from coretsia.supervisor.process_entries.definition import Process
    from coretsia.supervisor.process_entries.registry import ProcessEntry
    from coretsia.supervisor.process_manager.mounted import MountedPool

__all__ = ["ProcessManager"]


@final
class ProcessManager:
    """A named pool: its registry, in worker-id order, plus ``start`` and ``stop``.

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
        self._registry = Registry(ipc_type, msg_queue_key)
        self._runtime = Runtime(root)

    @property
    def registry(self) -> Registry:
        """The registry this manager registers into and starts from."""
        return self._registry

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
        self._registry.add(worker_num, process, enable_async, name)
        return self

    # -- queries --------------------------------------------------------------------

    def all(self) -> dict[str, Process]:
        """Every registered (effective) task keyed by name, in worker-id order (a copy)."""
        return {entry.name: entry.task for entry in self._registry.entries()}

    def has(self, name: str) -> bool:
        """Whether ``name`` is registered; nothing about whether its worker is alive."""
        return self._registry.find(name) is not None

    def get(self, name: str) -> Process:
        """The registered task named ``name``: the same object on every lookup."""
        entry = self._registry.find(name)
        if entry is None:
            raise ProcessNotFoundError(name=name)
        return entry.task

    def entries(self) -> tuple[ProcessEntry, ...]:
        """Every registered worker in worker-id order, with its address (for the runtime)."""
        return self._registry.entries()

    def discovered(self) -> tuple[Discovered, ...]:
        """The ``@process`` declarations ``discover`` found, in order."""
        return self._registry.discovered()

    # -- pool-wide settings ---------------------------------------------------------

    def set_ipc_type(self, ipc_type: str) -> ProcessManager:
        """Set the IPC mode every worker shares; return this manager."""
        self._registry.set_ipc_type(ipc_type)
        return self

    def get_ipc_type(self) -> str:
        """The IPC mode: ``none``, ``unixsock`` or ``msgqueue``."""
        return self._registry.ipc_type

    def set_msg_queue_key(self, msg_queue_key: int) -> ProcessManager:
        """Set the System V message-queue key (0: a private queue); return this manager."""
        self._registry.set_msg_queue_key(msg_queue_key)
        return self

    def get_msg_queue_key(self) -> int:
        """The System V message-queue key (0: a private queue)."""
        return self._registry.msg_queue_key

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Run the pool in the foreground; return once it stopped and every worker is reaped.

        Refused outside the creating process, off the main thread, inside a running
        event loop (``worker-signal-handling-unavailable``) and inside a managed worker
        (:class:`NestedPoolError`); an empty or stopped registry starts nothing. A pool
        that fails raises its :class:`~coretsia.worker_protocol.exceptions.WorkerError`
        after its shutdown. See :mod:`.lifecycle`.
        """
        self._runtime.start(self._registry)

    def running(self) -> MountedPool:
        """The pool mounted in the running asyncio or trio loop: ``async with``.

        ``async with manager.running() as pool:`` starts the pool without blocking the
        loop and enters once every slot is ready; leaving the block (or cancelling it)
        stops the pool within its budgets and returns once every process was reaped. A
        failure is raised like :meth:`start`'s. Refused inside a managed worker
        (:class:`NestedPoolError`), outside an asyncio or trio loop
        (:class:`HostLoopUnsupportedError`), while another pool runs in this process
        (:class:`PoolAlreadyRunningError`). See :mod:`.mounted`.
        """
        # deferred: platform-only
        from coretsia.supervisor.process_manager.mounted import MountedPool

        return MountedPool(self._runtime, self._registry)

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
        return self._registry.closed
