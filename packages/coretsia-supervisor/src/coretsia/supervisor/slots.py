"""The slot state machine: one task per slot spawns its worker, reads its channel, judges
its exit and replaces or recycles it.

Each slot's task runs under :meth:`Pool.until_ending`, so the pool's first stop or failure
cancels every pending judgement, back-off and recycle at once; nothing polls a flag. The
reader of each worker's channel runs outside that scope, in the slot's own nursery, and
reads to the channel's end even during a stop: a worker that drains still reports its
failed tasks, and never writes into a channel closed under it.

A worker's exit (the guardian's channel) and its last frames (its own channel) travel on
different sockets: the exit is judged only once the worker's channel reached its end, so
a ``retiring`` or ``failed`` frame is never overtaken by the exit it announced.

With ``heartbeat_timeout_ms`` on, each worker's life also runs its
:class:`~coretsia.supervisor.heartbeat_watch.HeartbeatWatch` from ``ready`` to its exit;
every frame the reader gets renews it.
"""

from __future__ import annotations

import collections
import enum
import logging
import socket
import sys
from collections.abc import Callable
from typing import Final

import attrs
import trio

from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.guardian_link import GuardianLink
from coretsia.supervisor.heartbeat_watch import HeartbeatWatch
from coretsia.supervisor.pool import Pool, Slot, SlotState, StopCause
from coretsia.supervisor.respawn import RespawnPolicy
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    ProtocolError,
    RuntimeEntrypointError,
    WorkerError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
    error_for,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal.guardian import Spawn
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.internal.runtime.logs import event
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR
from coretsia.worker_protocol.runtime_entrypoints import entrypoint_for
from coretsia.worker_protocol.vocabulary import PoolStatus
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Ready,
    Retiring,
    ShutdownRequest,
    SourceAvailable,
    SourceUnavailable,
    TaskFailed,
    TaskLeaseLost,
)
from coretsia.worker_protocol.worker_conversation import SupervisorConversation

LAUNCHER_CODE: Final = "from coretsia.supervisor.launcher import main; main()"
"""What every worker runs, as ``python -c``: the launcher without ``runpy``.

``-m coretsia.supervisor.launcher`` would work the same, but ``runpy`` costs every worker
boot a few milliseconds and about 0.2 MiB; the command line still names the launcher."""

LAST_WORDS_S: Final = 1.0
"""How long a judgement waits for the worker's channel to end (a grandchild may hold it)."""

GROUP_SIGNAL_GRACE_S: Final = 0.5
"""How long a SIGTERMed worker's exit waits for the pool's own stop to land.

A service manager that signals the whole group (systemd's default
``KillMode=control-group``, a terminal's process group) reaches the workers and the
supervisor at the same instant: a graceful stop must not be misread as a crash."""


@attrs.frozen
class _Channel:
    """Our end of one worker's channel, the rules it follows, and (heartbeat on) when the
    worker was last heard."""

    sock: trio.socket.SocketType
    conversation: SupervisorConversation
    heartbeat: HeartbeatWatch | None


class _Next(enum.Enum):
    RECYCLE = "recycle"
    REPLACE = "replace"
    END = "end"


class RetireTurns:
    """Who may retire now: one slot at a time, in the order they asked.

    A pool of N never has more than one slot out of service for a recycle, however the
    workers' request counts line up. The turn is held from the grant until the
    replacement is ready (or the slot's task ends). A process entry (``max_memory_mb``)
    is granted at once and takes no turn: it serves no tasks, and one that is slow to
    return to its stop must not keep the task workers from theirs.
    """

    def __init__(self) -> None:
        self._waiting: collections.deque[Slot] = collections.deque()
        self._holder: Slot | None = None

    def ask(self, slot: Slot) -> None:
        """``slot``'s worker sent ``retiring``: queue it and grant if nobody holds the turn."""
        if slot.entry:
            _grant(slot)
            return
        self._waiting.append(slot)
        self._grant()

    def release(self, slot: Slot) -> None:
        """``slot`` is done with its turn (if it held it): the next one may go."""
        if self._holder is slot:
            self._holder = None
            self._grant()

    def _grant(self) -> None:
        while self._holder is None and self._waiting:
            slot = self._waiting.popleft()
            # A worker that asked and has exited since, or a replacement that never
            # asked, is passed over.
            if slot.state is SlotState.READY and slot.retiring:
                self._holder = slot
                _grant(slot)


def _grant(slot: Slot) -> None:
    slot.granted.set()
    slot.news.set()


class Slots:
    """The pool's slots, each kept by its own task (:meth:`keep`)."""

    def __init__(
        self,
        pool: Pool,
        link: GuardianLink,
        config: PoolConfig,
        pin: str,
        on_ready: Callable[[], None],
    ) -> None:
        self._pool = pool
        self._link = link
        processes = config.processes
        self._respawn = RespawnPolicy(
            processes.respawn_interval_ms / 1000,
            processes.restart_intensity,
            processes.restart_period_ms / 1000,
            processes.restart_backoff_max_ms / 1000,
        )
        self._start_timeout_s = config.budgets.start_timeout_ms / 1000
        self._entrypoint = entrypoint_for(config.worker.task_type.value)
        self._heartbeat_timeout_s = config.budgets.heartbeat_timeout_ms / 1000
        self._pin = pin
        self._on_ready = on_ready
        self._turns = RetireTurns()

    async def keep(self, slot: Slot, *, task_status: trio.TaskStatus[None]) -> None:
        """Spawn ``slot``'s first worker (then report started), and keep the slot served
        until the pool ends."""
        async with trio.open_nursery() as readers:
            with self._pool.until_ending():
                try:
                    channel = await self._spawn(slot, readers)
                finally:
                    task_status.started()
                try:
                    if channel is not None:
                        await self._serve(slot, channel, readers)
                finally:
                    self._turns.release(slot)

    async def _serve(self, slot: Slot, channel: _Channel, readers: trio.Nursery) -> None:
        while True:
            exit_kind = await self._live(slot, channel)
            step = await self._judge(slot, exit_kind)
            if step is _Next.END:
                return
            try:
                respawned = await self._respawn_ready(slot, readers)
                if respawned is None:
                    return
                channel = respawned
            finally:
                if step is _Next.RECYCLE:
                    self._turns.release(slot)

    # -- one worker's life --------------------------------------------------------------

    async def _spawn(self, slot: Slot, readers: trio.Nursery) -> _Channel | None:
        """Ask the guardian for a worker of ``slot`` and start reading its channel.

        Return our end of the channel, or None when the guardian could not be asked (the
        pool has failed)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        timeout_s = self._heartbeat_timeout_s
        channel = _Channel(
            trio.socket.from_stdlib_socket(ours),
            SupervisorConversation(),
            HeartbeatWatch(timeout_s) if timeout_s else None,
        )
        slot.renew(trio.current_time())
        event("worker.spawned", slot=slot.index)  # stamped with spawned_at: the request
        try:
            await self._link.send(Spawn(slot=slot.index, argv=self._argv(slot)), (theirs.fileno(),))
        except WorkerError as exc:
            channel.sock.close()
            self._pool.fail(exc)
            return None
        finally:
            theirs.close()
        readers.start_soon(self._read, slot, channel)
        return channel

    async def _live(self, slot: Slot, channel: _Channel) -> ExitKind | None:
        """Wait for the current worker's exit and its last words; send ``retire`` if it
        asked for it and its turn comes. Return how it exited."""
        if channel.heartbeat is None:
            await self._retire_when_granted(slot, channel)
        else:
            async with trio.open_nursery() as life:
                life.start_soon(self._watch_heartbeat, slot, channel.heartbeat)
                await self._retire_when_granted(slot, channel)
                life.cancel_scope.cancel()
        with trio.move_on_after(LAST_WORDS_S):
            await slot.channel_closed.wait()
        return slot.exit_kind

    async def _watch_heartbeat(self, slot: Slot, heartbeat: HeartbeatWatch) -> None:
        """From ``ready`` on (a booting worker is the start timeout's business)."""
        await slot.settled.wait()
        if slot.state is SlotState.READY:
            await heartbeat.watch(slot)

    async def _retire_when_granted(self, slot: Slot, channel: _Channel) -> None:
        """Until the worker exits; if its turn to retire comes first, tell it on the way."""
        await slot.news.wait()
        if slot.exited.is_set():
            return
        event("worker.retired", slot=slot.index, cause=slot.retire_cause.value)
        try:
            await channel.sock.send(channel.conversation.send_retire())
        except (OSError, trio.ClosedResourceError):
            pass  # the worker is gone already; its exit is judged on its own
        await slot.exited.wait()

    async def _judge(self, slot: Slot, exit_kind: ExitKind | None) -> _Next:
        """Decide what a worker's exit means: recycle, replace, or the pool's failure."""
        if exit_kind is ExitKind.SIGNAL_TERM:
            await trio.sleep(GROUP_SIGNAL_GRACE_S)  # the pool's own stop cancels us here
        if slot.retiring and exit_kind is ExitKind.EXIT_0:
            self._pool.recycles[slot.retire_cause] += 1
            return _Next.RECYCLE  # a clean retirement, even before every slot is ready
        if slot.entry and (slot.started or self._pool.status is not PoolStatus.STARTING):
            # Seed 003: a returning or failing entry is replaced; only a first boot that
            # never became ready fails the start, as a task worker's would.
            return await self._replace(slot, exit_kind)
        if slot.failed_reason is Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE:
            # The boot's guard: the Kernel's failure, named for this pool's entrypoint.
            self._pool.fail(RuntimeEntrypointError(self._entrypoint))
        elif slot.failed_reason is not None:
            self._pool.fail(error_for(slot.failed_reason, slot.failed_fault))
        elif self._pool.status is PoolStatus.STARTING:
            self._pool.fail(WorkerStartFailedError(Reason.CHILD_START_FAILED))
        else:
            self._pool.fail(WorkerLifecycleFailedError(Reason.CHILD_EXITED))
        return _Next.END

    async def _replace(self, slot: Slot, exit_kind: ExitKind | None) -> _Next:
        """Wait out the pace :class:`RespawnPolicy` sets before an entry's next worker."""
        now = trio.current_time()
        lived = now - slot.ready_at if slot.ready_at is not None else 0.0
        slot.rapid_exits = self._respawn.next_rapid_exits(lived, slot.rapid_exits)
        if not self._respawn.admit(now):
            self._pool.fail(WorkerLifecycleFailedError(Reason.RESTART_INTENSITY_EXCEEDED))
            return _Next.END
        event("worker.replaced", slot=slot.index, exit_kind=exit_kind.value if exit_kind else "")
        await trio.sleep(self._respawn.delay(slot.spawned_at, slot.rapid_exits, now))
        return _Next.REPLACE

    async def _respawn_ready(self, slot: Slot, readers: trio.Nursery) -> _Channel | None:
        """Spawn ``slot`` again and see it become ready within ``start_timeout_ms``.

        A new worker that never reports ready fails the pool rather than leave the slot
        out of service without a word. Return its channel, or None when the pool failed.
        """
        channel = await self._spawn(slot, readers)
        if channel is None:
            return None
        with trio.move_on_after(self._start_timeout_s):
            await slot.settled.wait()
        if slot.state is SlotState.SPAWNING:
            self._pool.fail(WorkerStartFailedError(Reason.READINESS_TIMEOUT))
            return None
        return channel

    def _argv(self, slot: Slot) -> tuple[str, ...]:
        return (
            sys.executable,
            "-c",
            LAUNCHER_CODE,
            f"--coretsia-worker-artifact-root={GENERATIONS_DIR}",
            f"--coretsia-worker-generation={self._pin}",
            f"--coretsia-worker-slot={slot.index}",
            "--coretsia-worker-channel-fd=3",
            "--coretsia-worker-stop-fd=4",
        )

    # -- the worker's channel -----------------------------------------------------------

    async def _read(self, slot: Slot, channel: _Channel) -> None:
        """Read the worker's frames to the channel's end; a broken rule fails the pool."""
        closed = slot.channel_closed
        conversation = channel.conversation
        try:
            with channel.sock:
                while (frame := conversation.next_event()) is not Need.CLOSED:
                    if frame is Need.DATA:
                        conversation.receive_data(await channel.sock.recv(4096))
                        continue
                    if channel.heartbeat is not None:
                        channel.heartbeat.heard()  # any frame: a heartbeat says no more
                    self._on_frame(slot, frame)
        except ProtocolError:
            self._pool.fail(conversation.failure())
        except OSError:
            return
        finally:
            closed.set()

    def _on_frame(self, slot: Slot, frame: object) -> None:
        if isinstance(frame, Ready):
            self._on_ready_frame(slot)
        elif isinstance(frame, Failed):
            slot.failed_reason = frame.reason
            slot.failed_fault = frame.fault
        elif isinstance(frame, TaskFailed):
            log_task_failure(slot.index, frame)
        elif isinstance(frame, Retiring):  # once per worker: the conversation sees to it
            slot.retiring = True
            slot.retire_cause = frame.cause
            self._turns.ask(slot)
        elif isinstance(frame, ShutdownRequest):
            event("pool.shutdown_requested", slot=slot.index)
            self._pool.request_stop(StopCause.APPLICATION)
        else:
            on_source_frame(slot, frame)

    def _on_ready_frame(self, slot: Slot) -> None:
        if slot.state is SlotState.EXITED:
            # Its exit (guardian channel) overtook this frame (its own channel): it is
            # not ready any more, but an entry that got this far did boot (it is
            # replaced, not fatal).
            slot.started = slot.started or slot.entry
            self._pool.note_ready()
            return
        slot.state = SlotState.READY
        slot.started = True
        slot.ready_at = trio.current_time()
        slot.settled.set()
        event("worker.ready", slot=slot.index)
        self._on_ready()
        self._pool.note_ready()


def mark_exited(pool: Pool, index: int, exit_kind: ExitKind) -> bool:
    """The guardian reports that ``index``'s worker exited: wake the slot's task.

    False for a slot the pool does not have."""
    if not 0 <= index < len(pool.slots):
        return False
    slot = pool.slots[index]
    slot.state = SlotState.EXITED
    slot.exit_kind = exit_kind
    slot.pid = None
    slot.settled.set()
    slot.exited.set()
    slot.news.set()
    event("worker.exited", slot=slot.index, exit_kind=exit_kind.value)
    return True


def on_source_frame(slot: Slot, frame: object) -> None:
    """A worker's task source lost its backend, is back, or lost a lease meanwhile."""
    if isinstance(frame, SourceUnavailable):
        slot.source_fault = frame.fault
        event("task_source.unavailable", logging.WARNING, slot=slot.index, fault=frame.fault.value)
    elif isinstance(frame, SourceAvailable):
        slot.source_fault = None
        event("task_source.available", slot=slot.index)
    elif isinstance(frame, TaskLeaseLost):
        event("task.lease_lost", logging.WARNING, slot=slot.index)


def log_task_failure(slot: int, frame: TaskFailed) -> None:
    """``task.failed`` with what the worker could say of it: safe fields only."""
    fields: dict[str, str | int | bool] = {"slot": slot, "error_type": frame.error_type}
    if frame.attempt is not None:
        fields["attempt"] = frame.attempt
    if frame.retried is not None:
        fields["retried"] = frame.retried
    event("task.failed", logging.WARNING, **fields)
