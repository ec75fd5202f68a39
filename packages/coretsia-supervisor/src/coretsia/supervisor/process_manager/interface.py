"""Seed 003's ``Contract\\ProcessManagerInterface``, as a :class:`typing.Protocol`.

Framework code that registers or runs entries should depend on this contract, not on
:class:`~.manager.ProcessManager`: a test double or another implementation then fits
where the manager does. It lists seed 003's methods in Python names, nothing more; the
mounted form (``ProcessManager.running``) is the manager's own addition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from coretsia.supervisor.process_entries.definition import Process

__all__ = ["ProcessManagerInterface"]


class ProcessManagerInterface(Protocol):
    """Registration, lookups, the pool-wide IPC settings, ``start`` and ``stop``."""

    def add(
        self,
        process: Process | Callable[[Any, int], object],
        enable_async: bool | None = None,
        name: str | None = None,
    ) -> ProcessManagerInterface:
        """Register one worker running ``process``; return this manager."""

    def add_batch(
        self,
        worker_num: int,
        process: Process | Callable[[Any, int], object],
        enable_async: bool | None = None,
        name: str | None = None,
    ) -> ProcessManagerInterface:
        """Register ``worker_num`` workers at once, all or none; return this manager."""

    def all(self) -> dict[str, Process]:
        """Every registered task keyed by name, in worker-id order."""

    def has(self, name: str) -> bool:
        """Whether ``name`` is registered (nothing about liveness)."""

    def get(self, name: str) -> Process:
        """The registered task named ``name``; ``ProcessNotFoundError`` if none."""

    def set_ipc_type(self, ipc_type: str) -> ProcessManagerInterface:
        """Set the IPC mode every worker shares; return this manager."""

    def get_ipc_type(self) -> str:
        """The IPC mode."""

    def set_msg_queue_key(self, msg_queue_key: int) -> ProcessManagerInterface:
        """Set the System V message-queue key; return this manager."""

    def get_msg_queue_key(self) -> int:
        """The System V message-queue key."""

    def start(self) -> None:
        """Run the pool; return once it stopped and every worker was reaped."""

    def stop(self) -> ProcessManagerInterface:
        """Request the whole pool's shutdown, from the parent or a worker."""
