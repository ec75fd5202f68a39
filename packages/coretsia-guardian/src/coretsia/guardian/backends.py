"""How the guardian starts and signals workers, per process driver.

``fork`` (this module): the guardian itself spawns each worker with ``posix_spawn`` from
its spawner thread; workers are its children, reaped by its one ``waitpid`` loop,
signalled as process groups while unreaped.

``proc`` (:mod:`coretsia.guardian.proc_backend`): the guardian spawns one
``coretsia-proc-host`` and drives the workers through it. That module is imported only
when the driver is ``proc``, so a ``fork`` guardian never loads the proc host's frames.

Both present the same small surface, :class:`Backend`, to :mod:`coretsia.guardian.runtime`.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from typing import Protocol

from coretsia.guardian.spawner import Spawner, SpawnRequest
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.internal.guardian import Exited, Spawned, SpawnFailed
from coretsia.worker_protocol.internal.runtime.spawn_errors import spawn_failure

ExitReport = Callable[[Exited], None]


class Backend(Protocol):
    """What the guardian's runtime needs from a driver."""

    async def spawn(
        self, slot: int, argv: tuple[str, ...], channel_fd: int
    ) -> Spawned | SpawnFailed:
        """Start one worker whose worker channel is ``channel_fd`` (closed by the caller)."""

    def signal(self, slot: int, pid: int, sig: signal.Signals) -> None:
        """Signal one live worker's process group."""

    def helper_pids(self) -> frozenset[int]:
        """Our own helper processes, which the descendant sweep must spare."""

    async def close(self, budget_s: float) -> None:
        """Let go of the driver once no worker is left (the proc host exits)."""


class ForkBackend:
    """Workers are the guardian's own children."""

    def __init__(self, spawner: Spawner, env: Mapping[str, str], shared_fds: tuple[int, int]):
        self._spawner = spawner
        self._env = env
        self._shared_fds = shared_fds

    async def spawn(
        self, slot: int, argv: tuple[str, ...], channel_fd: int
    ) -> Spawned | SpawnFailed:
        try:
            pid = await self._spawner.spawn(
                SpawnRequest(argv, self._env, (channel_fd, *self._shared_fds))
            )
        except OSError as exc:
            return SpawnFailed(slot=slot, reason=spawn_failure(exc, Reason.FORK_FAILED, argv[0]))
        return Spawned(slot=slot, pid=pid)

    def signal(self, slot: int, pid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pid, sig)  # an unreaped child: its group id cannot have been reused
        except (ProcessLookupError, PermissionError):
            pass

    def helper_pids(self) -> frozenset[int]:
        return frozenset()

    async def close(self, budget_s: float) -> None:
        return
