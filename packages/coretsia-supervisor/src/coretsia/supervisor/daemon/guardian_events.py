"""What the guardian reports, as the supervisor's run needs it.

One task reads the guardian channel for the whole run (:meth:`GuardianEvents.follow`) and
turns each report into a fact the run waits on or a call it makes: a worker's exit goes
to its slot, a stop phase to the ``stop`` clients, ``drained`` and ``released`` end the
shutdown, a failure of the generation fails the pool, and the pids it reports are what
the sweep may reap if the guardian itself is killed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import attrs
import trio

from coretsia.supervisor.daemon.guardian_link import GuardianLink
from coretsia.supervisor.daemon.pool import Pool
from coretsia.supervisor.daemon.sweep import sweep_orphans
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import ControlResponse, StopProgress
from coretsia.worker_protocol.exceptions import (
    WorkerError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
    error_for,
)
from coretsia.worker_protocol.internal.guardian import (
    Drained,
    Exited,
    GenerationFailed,
    HostStarted,
    Phase,
    Release,
    Released,
    Spawned,
    SpawnFailed,
)
from coretsia.worker_protocol.internal.runtime.logs import event
from coretsia.worker_protocol.vocabulary import ShutdownPhase

if TYPE_CHECKING:
    from coretsia.worker_protocol.internal.runtime.cgroup import GenerationCgroup

_SPAWN_FAILURES: Final = frozenset(
    {Reason.FORK_FAILED, Reason.INTERPRETER_UNAVAILABLE, Reason.PROCESS_HOST_FAILED}
)
"""The ``spawn-failed`` reasons that are their own failure (any other: the child's start)."""

RELEASE_TIMEOUT_S: Final = 5.0
"""How long the guardian may take to release the lock, then to exit."""


@attrs.define
class GuardianEvents:
    """The guardian's reports of one run, and the end of the generation they tell."""

    pool: Pool
    on_exit: Callable[[Exited], None]
    broadcast: Callable[[ControlResponse], None]
    drained: trio.Event = attrs.field(factory=trio.Event)
    """Set when the guardian reported the generation drained, or is gone."""
    clean: bool | None = None
    """Whether every process ended within the budgets; None until ``drained``."""
    forced: bool = False
    """A worker was still alive when the shutdown went past its cooperative phase: it was
    sent SIGTERM (or SIGKILL), its task cut short. Stray descendants alone do not count."""
    released: trio.Event = attrs.field(factory=trio.Event)
    lock_released: bool = False
    """The guardian confirmed the lock's release (not merely gone)."""
    lost: bool = False
    """The guardian went away without being asked to: what it contained is unknown."""
    letting_go: bool = False
    """The supervisor closes the channel itself: its end is expected."""
    _worker_pids: dict[int, int] = attrs.field(factory=dict)
    _helper_pids: set[int] = attrs.field(factory=set)

    @property
    def known_pids(self) -> frozenset[int]:
        """The live workers' and the proc host's pids, as the guardian last reported them."""
        return frozenset({*self._worker_pids.values(), *self._helper_pids})

    @property
    def contained(self) -> bool:
        """The guardian reported the end of the generation and was not lost."""
        return self.clean is not None and not self.lost

    async def follow(self, link: GuardianLink) -> None:
        """Read every report until the channel ends."""
        while True:
            frame = await link.receive()
            if frame is None:
                # The end of a channel we closed ourselves, or that followed the release,
                # is expected: only any other end is a lost guardian.
                if not (self.letting_go or self.released.is_set()):
                    self.lost = True
                    self.pool.fail(WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED))
                self.drained.set()
                self.released.set()
                return
            if isinstance(frame, Spawned):
                self._worker_pids[frame.slot] = frame.pid
                if 0 <= frame.slot < len(self.pool.slots):
                    self.pool.slots[frame.slot].pid = frame.pid  # for its resident memory
            elif isinstance(frame, HostStarted):
                self._helper_pids.add(frame.pid)
            elif isinstance(frame, Exited):
                self._worker_pids.pop(frame.slot, None)
                self.on_exit(frame)
            elif isinstance(frame, SpawnFailed):
                if frame.reason in _SPAWN_FAILURES:
                    # The OS refused (limits), the interpreter cannot run, or the host
                    # (proc host, fork server) is gone: each its own failure (for the
                    # host, whichever of this and its ``generation-failed`` comes first).
                    self.pool.fail(error_for(frame.reason))
                else:
                    self.pool.fail(WorkerStartFailedError(Reason.CHILD_START_FAILED))
            elif isinstance(frame, Phase):
                if frame.phase is not ShutdownPhase.COOPERATIVE and self._worker_pids:
                    self.forced = True
                event(f"shutdown.{frame.phase.value}")
                self.broadcast(StopProgress(frame.phase, frame.budget_ms))
            elif isinstance(frame, Drained):
                self.clean = frame.clean
                self.drained.set()
            elif isinstance(frame, Released):
                self.lock_released = True
                self.released.set()
            elif isinstance(frame, GenerationFailed):
                self.pool.fail(error_for(frame.reason))

    async def release(self, link: GuardianLink) -> bool:
        """Ask the guardian to release the lock, last; True once it confirmed."""
        try:
            await link.send(Release())
        except WorkerError:
            pass
        with trio.move_on_after(RELEASE_TIMEOUT_S):
            await self.released.wait()
        self.letting_go = True
        link.close()
        await link.wait_exit()
        return self.lock_released

    async def let_go(
        self, link: GuardianLink, budget_s: float, cgroup: GenerationCgroup | None
    ) -> None:
        """Close the channel of a generation that did not end cleanly, and sweep if need be.

        A guardian that reported ``drained`` and is still alive keeps containing what is
        left (a process that survived SIGKILL) and holds the lock until it is gone; only a
        guardian that is really gone without having done so leaves us anything to sweep:
        its marked descendants, and ``cgroup``, the generation's cgroup if it left one.
        """
        self.letting_go = True
        exited = await link.abandon()
        if exited and not self.contained:
            await trio.to_thread.run_sync(sweep_orphans, budget_s, self.known_pids)
            if cgroup is not None:
                await trio.to_thread.run_sync(cgroup.kill, budget_s)
                cgroup.remove()
