"""The slot driver: one task per slot spawns its worker, follows the story of its life,
judges its exit and replaces or recycles it.

The story of one worker's life is one ordered stream (:mod:`coretsia.supervisor.daemon.worker_life`
says why the exit is always last): :class:`Life` feeds it from the worker's channel and
ends it with the guardian's ``exited``, and the slot's task applies it, event by event,
with :func:`~coretsia.supervisor.daemon.worker_life.hear`. The task follows the story outside
:meth:`Pool.until_ending`, to the exit even during a stop: a worker that drains still
reports its failed tasks, and never writes into a channel closed under it. Only the
judgement, the respawn pace and the next spawn run under it, so the pool's first stop or
failure cancels them at once; nothing polls a flag.

With ``heartbeat_timeout_ms`` on, each worker's life also runs its
:class:`~coretsia.supervisor.daemon.heartbeat_watch.HeartbeatWatch` from ``ready`` to its exit;
every frame renews it.
"""

from __future__ import annotations

import collections
import logging
import math
import socket
import sys
from collections.abc import Callable
from typing import Final

import trio

from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.daemon.guardian_link import GuardianLink
from coretsia.supervisor.daemon.heartbeat_watch import HeartbeatWatch
from coretsia.supervisor.daemon.pool import Pool, Slot, SlotState, StopCause
from coretsia.supervisor.daemon.respawn import RespawnPolicy
from coretsia.supervisor.daemon.worker_life import (
    Act,
    Broken,
    Exit,
    Granted,
    Happening,
    Verdict,
    hear,
    judge,
)
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import receive_sync
from coretsia.worker_protocol.exceptions import (
    ProtocolError,
    RemoteProtocolError,
    WorkerError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal.guardian import Spawn
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.internal.runtime.logs import event
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR
from coretsia.worker_protocol.runtime_entrypoints import entrypoint_for
from coretsia.worker_protocol.vocabulary import PoolStatus
from coretsia.worker_protocol.worker_channel import (
    SourceAvailable,
    SourceUnavailable,
    TaskFailed,
    TaskLeaseLost,
)
from coretsia.worker_protocol.worker_conversation import SupervisorConversation

LAUNCHER_CODE: Final = "from coretsia.supervisor.worker_side.launcher import main; main()"
"""What every worker runs, as ``python -c``: the launcher without ``runpy``.

``-m coretsia.supervisor.worker_side.launcher`` would work the same, but ``runpy`` adds to
every worker's boot (docs/performance.md, "Timings the code refers to"); the command line
still names the launcher."""

GROUP_SIGNAL_GRACE_S: Final = 0.5
"""How long a SIGTERMed worker's exit waits for the pool's own stop to land.

A service manager that signals the whole group (systemd's default
``KillMode=control-group``, a terminal's process group) reaches the workers and the
supervisor at the same instant: a graceful stop must not be misread as a crash. Nothing
causal links the two signals (the worker dies by the signal's default action and says
nothing; the supervisor's may be sent after it), so this one wait stays: see
``docs/architecture.md``, "One story per worker life"."""

_CHUNK: Final = 65536
"""Most bytes read from a worker's channel at once."""


class Life:
    """Our end of one worker's channel, read into the story of its life.

    Two parties feed the story, in one task each and never at once: :meth:`read`, as
    the worker's frames arrive, and :meth:`end`, when the guardian reports the exit. The
    exit comes after everything the worker wrote, which is therefore already in our end
    of the channel: :meth:`end` reads it without waiting, then appends the exit and closes
    the channel. Bytes a grandchild that kept the descriptor writes later are not this
    life's.
    """

    def __init__(self, sock: socket.socket, heartbeat: HeartbeatWatch | None) -> None:
        sock.setblocking(False)  # noqa: FBT003 - the standard library's own signature
        self._sock = sock
        self._conversation = SupervisorConversation()
        self.heartbeat = heartbeat
        self._tell, self.story = trio.open_memory_channel[Happening](math.inf)
        self._reading = True
        self._mid_frame = False

    async def read(self) -> None:
        """Read frames as they come, until the channel ends or breaks, or the life does."""
        try:
            while self._reading:
                await trio.lowlevel.wait_readable(self._sock)
                self._pull()
        except trio.ClosedResourceError:
            pass  # :meth:`end` closed the channel: the story is complete
        finally:
            self._close()  # its end, a broken rule, or the run's

    def end(self, exit_kind: ExitKind) -> None:
        """The guardian reaped the worker: read its last words, then tell its exit."""
        self._pull()
        if self._reading:  # no end yet: what a grandchild may still write is not this life's
            self._conversation.receive_data(b"")
            self._pull()  # the end, or ``frame-truncated``: it died writing that frame
        self._tell.send_nowait(Exit(exit_kind, self._mid_frame))
        self._close()

    def grant(self) -> None:
        """The worker's turn to retire came (it is told in the story's order)."""
        self._tell.send_nowait(Granted.TURN)

    def send_retire(self) -> None:
        """Send the ``retire`` grant: one short frame, into a buffer nothing else uses."""
        try:
            self._sock.send(self._conversation.send_retire())
        except OSError:
            pass  # the worker is gone already; its exit is judged on its own

    def _close(self) -> None:
        self._reading = False  # a reader that had not started yet never will
        if self._sock.fileno() != -1:
            trio.lowlevel.notify_closing(self._sock)
            self._sock.close()

    def _pull(self) -> None:
        """Tell every frame whose bytes are already here; never wait."""
        conversation = self._conversation
        try:
            while self._reading:
                frame = receive_sync(conversation, self._arrived)
                if frame is Need.DATA:
                    return
                if frame is Need.CLOSED:
                    self._reading = False  # its end, between frames: the exit tells how
                    return
                if self.heartbeat is not None:
                    self.heartbeat.heard()  # any frame: a heartbeat says no more
                self._tell.send_nowait(frame)
        except ProtocolError as exc:
            self._reading = False
            if isinstance(exc, RemoteProtocolError) and exc.reason is Reason.FRAME_TRUNCATED:
                self._mid_frame = True  # it died writing that frame
            else:
                self._tell.send_nowait(Broken(conversation.failure()))

    def _arrived(self) -> bytes | None:
        """What the worker wrote so far (``b""``: its end), or None: nothing yet."""
        try:
            return self._sock.recv(_CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return b""  # reset: the worker is gone, and its exit will say how


class RetireTurns:
    """Who may retire now: one slot at a time, in the order they asked.

    A pool of N never has more than one slot out of service for a recycle, however the
    workers' request counts line up. The turn is held from the grant until the
    replacement is ready (or exits, or the slot's task ends). A process entry
    (``max_memory_mb``) is granted at once and takes no turn: it serves no tasks, and one
    that is slow to return to its stop must not keep the task workers from theirs.
    """

    def __init__(self, grant: Callable[[Slot], None]) -> None:
        self._grant_to = grant
        self._waiting: collections.deque[Slot] = collections.deque()
        self._holder: Slot | None = None

    def ask(self, slot: Slot) -> None:
        """``slot``'s worker sent ``retiring``: queue it and grant if nobody holds the turn."""
        if slot.entry:
            self._grant_to(slot)
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
                self._grant_to(slot)


class Slots:
    """The pool's slots, each kept by its own task (:meth:`keep`)."""

    def __init__(
        self,
        pool: Pool,
        link: GuardianLink,
        config: PoolConfig,
        pin: str,
        on_ready: Callable[[], None],
        on_exit: Callable[[], None],
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
        self._on_exit = on_exit
        self._turns = RetireTurns(self._grant)
        self._lives: dict[int, Life] = {}
        """The live workers' lives, by slot: from the spawn request to the exit."""

    def exited(self, index: int, exit_kind: ExitKind) -> bool:
        """The guardian reports that ``index``'s worker exited: end its life's story.

        False for a slot with no live worker (none the pool knows)."""
        life = self._lives.pop(index, None)
        if life is None:
            return False
        life.end(exit_kind)
        return True

    async def keep(self, slot: Slot, *, task_status: trio.TaskStatus[None]) -> None:
        """Spawn ``slot``'s first worker (then report started), and keep the slot served
        until the pool ends."""
        async with trio.open_nursery() as readers:
            try:
                life = None
                with self._pool.until_ending():
                    try:
                        life = await self._spawn(slot, readers)
                    finally:
                        task_status.started()
                ready_by = math.inf  # the first start's timeout is the pool's start's
                while life is not None:
                    await self._follow(slot, life, ready_by)
                    life = None
                    if self._pool.ending:
                        return  # exits of a stop are the shutdown's, not the slot's
                    with self._pool.until_ending():
                        if await self._judge(slot):
                            life = await self._spawn(slot, readers)
                            ready_by = trio.current_time() + self._start_timeout_s
            finally:
                self._turns.release(slot)

    # -- one worker's life --------------------------------------------------------------

    async def _spawn(self, slot: Slot, readers: trio.Nursery) -> Life | None:
        """Ask the guardian for a worker of ``slot`` and start reading its channel.

        Return its life, or None when the guardian could not be asked (the pool has
        failed)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        timeout_s = self._heartbeat_timeout_s
        life = Life(ours, HeartbeatWatch(timeout_s) if timeout_s else None)
        slot.renew(trio.current_time())
        event("worker.spawned", slot=slot.index)  # stamped with spawned_at: the request
        self._lives[slot.index] = life  # before the request: its exit may follow at once
        try:
            await self._link.send(Spawn(slot=slot.index, argv=self._argv(slot)), (theirs.fileno(),))
        except WorkerError as exc:
            del self._lives[slot.index]
            ours.close()
            self._pool.fail(exc)
            return None
        finally:
            theirs.close()
        readers.start_soon(life.read)
        return life

    async def _follow(self, slot: Slot, life: Life, ready_by: float) -> None:
        """Apply the story of ``slot``'s current worker up to its exit.

        ``ready_by``: a replacement that is not ready by then fails the pool rather than
        leave the slot out of service without a word."""
        async with trio.open_nursery() as watch:  # the heartbeat's, from ready on
            while True:
                with trio.move_on_at(ready_by) as waiting:
                    happening = await life.story.receive()
                if waiting.cancelled_caught:
                    self._pool.fail(WorkerStartFailedError(Reason.READINESS_TIMEOUT))
                    ready_by = math.inf
                    continue
                act = hear(slot, happening)
                if act is Act.END:
                    watch.cancel_scope.cancel()
                    self._ended(slot, happening)
                    return
                if act is Act.READY:
                    ready_by = math.inf
                if act is not None:
                    self._act(slot, life, act, happening, watch)

    def _act(
        self, slot: Slot, life: Life, act: Act, happening: Happening, watch: trio.Nursery
    ) -> None:
        if act is Act.READY:
            slot.ready_at = trio.current_time()
            event("worker.ready", slot=slot.index)
            self._turns.release(slot)  # a recycle's turn ends with its replacement ready
            if life.heartbeat is not None:
                watch.start_soon(life.heartbeat.watch, slot)
            self._on_ready()
            self._pool.note_ready()
        elif act is Act.ASK_TURN:
            self._turns.ask(slot)
        elif act is Act.RETIRE:
            if not self._pool.ending:  # a stop tells every worker already
                event("worker.retired", slot=slot.index, cause=slot.retire_cause.value)
                life.send_retire()
        elif act is Act.STOP:
            event("pool.shutdown_requested", slot=slot.index)
            self._pool.request_stop(StopCause.APPLICATION)
        elif act is Act.FAIL:
            assert isinstance(happening, Broken)
            self._pool.fail(happening.error)
        else:
            log_frame(slot.index, happening)

    def _ended(self, slot: Slot, happening: Happening) -> None:
        assert isinstance(happening, Exit)
        if happening.mid_frame:
            event("worker.exited", slot=slot.index, exit_kind=happening.kind.value, mid_frame=True)
        else:
            event("worker.exited", slot=slot.index, exit_kind=happening.kind.value)
        if not slot.granted:
            self._turns.release(slot)  # a replacement that exits before it is ready
        self._on_exit()

    def _grant(self, slot: Slot) -> None:
        life = self._lives.get(slot.index)
        if life is not None:
            life.grant()

    async def _judge(self, slot: Slot) -> bool:
        """Decide what a worker's exit means; True when the slot gets a new worker."""
        if slot.exit_kind is ExitKind.SIGNAL_TERM:
            await trio.sleep(GROUP_SIGNAL_GRACE_S)  # the pool's own stop cancels us here
        starting = self._pool.status is PoolStatus.STARTING
        verdict = judge(slot, starting=starting, entrypoint=self._entrypoint)
        if verdict is Verdict.RECYCLE:
            self._pool.recycles[slot.retire_cause] += 1
            return True
        if verdict is Verdict.REPLACE:
            return await self._replace(slot)
        self._pool.fail(verdict)
        return False

    async def _replace(self, slot: Slot) -> bool:
        """Wait out the pace :class:`RespawnPolicy` sets before an entry's next worker."""
        now = trio.current_time()
        lived = now - slot.ready_at if slot.ready_at is not None else 0.0
        slot.rapid_exits = self._respawn.next_rapid_exits(lived, slot.rapid_exits)
        if not self._respawn.admit(now):
            self._pool.fail(WorkerLifecycleFailedError(Reason.RESTART_INTENSITY_EXCEEDED))
            return False
        exit_kind = slot.exit_kind.value if slot.exit_kind else ""
        event("worker.replaced", slot=slot.index, exit_kind=exit_kind)
        await trio.sleep(self._respawn.delay(slot.spawned_at, slot.rapid_exits, now))
        return True

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


def log_frame(slot: int, frame: Happening) -> None:
    """A frame that is only logged: a failed task, a task source's state, a lost lease."""
    if isinstance(frame, TaskFailed):
        log_task_failure(slot, frame)
    elif isinstance(frame, SourceUnavailable):
        event("task_source.unavailable", logging.WARNING, slot=slot, fault=frame.fault.value)
    elif isinstance(frame, SourceAvailable):
        event("task_source.available", slot=slot)
    elif isinstance(frame, TaskLeaseLost):
        event("task.lease_lost", logging.WARNING, slot=slot)


def log_task_failure(slot: int, frame: TaskFailed) -> None:
    """``task.failed`` with what the worker could say of it: safe fields only."""
    fields: dict[str, str | int | bool] = {"slot": slot, "error_type": frame.error_type}
    if frame.attempt is not None:
        fields["attempt"] = frame.attempt
    if frame.retried is not None:
        fields["retried"] = frame.retried
    event("task.failed", logging.WARNING, **fields)
