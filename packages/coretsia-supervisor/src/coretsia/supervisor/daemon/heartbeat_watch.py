"""The supervisor's end of a worker's heartbeat: one deadline per worker, renewed by each
frame it sends.

With ``heartbeat_timeout_ms`` on, every worker sends ``heartbeat`` frames after ``ready``
(at a third of the timeout, from a small thread of its own: see
:mod:`coretsia.supervisor.worker_side.heartbeat`). Its slot's task runs :meth:`HeartbeatWatch.watch`
for the worker's life: a cancel scope whose deadline each frame pushes back, so a worker
that speaks costs no wake-up at all, and nothing loops over the slots. A worker silent
past the deadline (stopped by ``SIGSTOP``, frozen, starved of CPU, or an interpreter that
cannot run Python any more) makes its slot
:attr:`~coretsia.supervisor.daemon.pool.Slot.unresponsive`,
which ``health`` reports as ``worker-slot-unresponsive``; its next frame ends that.

Report only: the worker is left alone. Killing it would be an unexpected exit, which
fails the whole pool (seed 000), for a stall that may pass (a debugger, a swap storm, a
host under load); the orchestrator watching ``health`` decides, with its own thresholds
(``docs/reliability.md``).
"""

from __future__ import annotations

import logging

import trio

from coretsia.supervisor.daemon.pool import Slot
from coretsia.worker_protocol.internal.runtime.logs import event


class HeartbeatWatch:
    """When the current worker of a slot was last heard from, and whether too long ago."""

    __slots__ = ("_heard_at", "_scope", "_spoke", "timeout_s")

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._heard_at = trio.current_time()
        self._scope: trio.CancelScope | None = None
        self._spoke = trio.Event()

    def heard(self) -> None:
        """A frame came from the worker (any frame): push the deadline back, or end a
        silence."""
        self._heard_at = trio.current_time()
        if self._scope is not None:
            self._scope.deadline = self._heard_at + self.timeout_s
        self._spoke.set()

    async def watch(self, slot: Slot) -> None:
        """Keep ``slot.unresponsive`` true while its worker is silent past the timeout,
        and log each change; runs until cancelled (the worker's exit, the pool's end)."""
        try:
            while True:
                await self._until_silent()
                slot.unresponsive = True
                event("worker.unresponsive", logging.WARNING, slot=slot.index)
                self._spoke = trio.Event()
                await self._spoke.wait()
                slot.unresponsive = False
                event("worker.responsive", slot=slot.index)
        finally:
            slot.unresponsive = False  # an exited worker is not a hung one

    async def _until_silent(self) -> None:
        """Return once nothing was heard for ``timeout_s``."""
        while True:
            with trio.CancelScope(deadline=self._heard_at + self.timeout_s) as scope:
                self._scope = scope
                await trio.sleep_forever()
            self._scope = None
            # The deadline and a frame can become due in one turn of the loop (the
            # supervisor itself was stopped or starved): let the reader go first.
            await trio.sleep(0)
            if trio.current_time() - self._heard_at >= self.timeout_s:
                return
