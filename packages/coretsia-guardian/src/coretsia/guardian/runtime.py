"""The guardian of one worker generation: the lock, the processes, the bounded shutdown.

Rules of this module (everything that decides a worker's fate lives here):

1. The lock is taken before anything else may happen and released after everything
   else: ``locked`` is the first word about the generation, ``released`` the last.
2. The guardian alone starts, signals and reaps workers. It signals a worker's process
   group only while the worker is an unreaped child (its pid cannot have been reused), and
   any other descendant only through psutil, which checks the process's identity.
3. Shutdown is one procedure, run from a ``shutdown`` request or from the loss of the
   supervisor alike: cooperative stop (close the stop pipe), then SIGTERM, then SIGKILL,
   each bounded by the budgets received at the handshake. A supervisor that dies midway
   changes nothing.
4. The generation is gone when no descendant of the guardian is left. Only then is the
   lock released, even if that takes longer than every budget.
"""

from __future__ import annotations

import math
import os
import signal
from collections.abc import Mapping
from typing import Final

import attrs
import psutil
import trio

from coretsia.guardian.channel import FramedChannel
from coretsia.guardian.exit_kind import exit_kind
from coretsia.guardian.reaper import reap_forever
from coretsia.guardian.spawner import Spawner, SpawnRequest
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.internal.guardian import (
    Drained,
    Exited,
    GuardianFrame,
    Hello,
    Phase,
    Release,
    Shutdown,
    Spawn,
    Spawned,
    SpawnFailed,
    decode_guardian_frame,
    encode_guardian_frame,
)
from coretsia.worker_protocol.vocabulary import ShutdownPhase

PARENT_PID_ENV: Final = "CORETSIA_WORKER_PARENT_PID"
"""Tells a worker which process spawned it, so it can check it is still alive."""

_RECHECK_S: Final = 0.05
# A grandchild that dies while its own parent lives sends us no SIGCHLD; during shutdown
# only, liveness is re-checked at this period as well as on every reap.


@attrs.define
class _Worker:
    slot: int
    pid: int


class Generation:
    """The guardian's view of one generation; driven by :func:`run_generation`."""

    def __init__(self, channel: FramedChannel, hello: Hello, env: Mapping[str, str]) -> None:
        self._channel = channel
        self._hello = hello
        self._env = {**env, PARENT_PID_ENV: str(os.getpid())}
        self._workers: dict[int, _Worker] = {}
        self._changed = trio.Event()
        self._outbox, self._outbox_reader = trio.open_memory_channel[bytes](math.inf)
        self._stop_read, self._stop_write = os.pipe()
        self._spawner = Spawner()
        self._me = psutil.Process()

    # -- events from the reaper and the channel -----------------------------------------

    def on_exit(self, pid: int, status: int) -> None:
        """Reaper callback: report a worker's end; any reap may change liveness."""
        worker = self._workers.pop(pid, None)
        if worker is not None:
            self.post(Exited(slot=worker.slot, exit_kind=exit_kind(status)))
        self._changed.set()
        self._changed = trio.Event()

    def post(self, frame: GuardianFrame) -> None:
        """Queue a frame for the supervisor (dropped silently once it is gone)."""
        self._outbox.send_nowait(encode_guardian_frame(frame))

    async def write_outbox(self) -> None:
        """Send queued frames in order; after the supervisor is gone, discard them."""
        async for data in self._outbox_reader:
            try:
                await self._channel.send(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                continue

    async def spawn(self, frame: Spawn, channel_fd: int | None) -> None:
        """Start one worker; its channel descriptor arrived with the frame."""
        if channel_fd is None:
            self.post(SpawnFailed(slot=frame.slot, reason=Reason.CHILD_START_FAILED))
            return
        try:
            pid = await self._spawner.spawn(
                SpawnRequest(frame.argv, self._env, channel_fd, self._stop_read)
            )
        except OSError:
            self.post(SpawnFailed(slot=frame.slot, reason=Reason.FORK_FAILED))
            return
        finally:
            os.close(channel_fd)
        self._workers[pid] = _Worker(frame.slot, pid)
        self.post(Spawned(slot=frame.slot, pid=pid))

    # -- shutdown -----------------------------------------------------------------------

    def _descendants(self) -> list[psutil.Process]:
        try:
            found = self._me.children(recursive=True)
        except psutil.Error:
            return []
        return [p for p in found if _running(p)]

    def alive(self) -> bool:
        """True while any process of the generation is left."""
        return bool(self._workers) or bool(self._descendants())

    def _signal_all(self, sig: signal.Signals) -> None:
        for worker in self._workers.values():
            try:
                os.killpg(worker.pid, sig)  # unreaped child: its group id is still ours
            except (ProcessLookupError, PermissionError):
                pass
        for proc in self._descendants():
            try:
                proc.send_signal(sig)  # psutil checks identity before signalling
            except psutil.Error:
                pass

    async def _until_gone(self) -> None:
        while self.alive():
            changed = self._changed
            with trio.move_on_after(_RECHECK_S):
                await changed.wait()

    async def shutdown(self) -> bool:
        """Run the three bounded phases; True if nothing of the generation is left."""
        os.close(self._stop_write)  # every worker's stop descriptor becomes readable
        phases = (
            (ShutdownPhase.COOPERATIVE, self._hello.stop_timeout_ms, None),
            (ShutdownPhase.TERMINATE, self._hello.force_kill_timeout_ms, signal.SIGTERM),
            (ShutdownPhase.KILL, self._hello.force_kill_timeout_ms, signal.SIGKILL),
        )
        for phase, budget_ms, sig in phases:
            if not self.alive():
                break
            self.post(Phase(phase=phase, budget_ms=budget_ms))
            if sig is not None:
                self._signal_all(sig)
            with trio.move_on_after(budget_ms / 1000):
                await self._until_gone()
        return not self.alive()

    async def wait_until_gone(self) -> None:
        """Wait, unbounded, for a process that survived every phase to disappear."""
        await self._until_gone()

    def close(self) -> None:
        """Release what the generation holds (the lock is released by the caller)."""
        self._spawner.close()
        os.close(self._stop_read)
        self._outbox.close()


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def run_generation(channel: FramedChannel, hello: Hello) -> None:
    """Serve the supervisor until shutdown (asked for, or forced by its loss)."""
    generation = Generation(channel, hello, os.environ)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(reap_forever, generation.on_exit)
            nursery.start_soon(generation.write_outbox)
            supervisor_present = await _serve(channel, generation)
            clean = await generation.shutdown()
            generation.post(Drained(clean=clean))
            if supervisor_present:
                await _wait_for_release(channel)
            if not clean:
                await generation.wait_until_gone()
            nursery.cancel_scope.cancel()
    finally:
        generation.close()


async def _serve(channel: FramedChannel, generation: Generation) -> bool:
    """Handle spawn requests until ``shutdown`` (True) or the channel is lost (False)."""
    async with trio.open_nursery() as spawns:
        while True:
            frame = await receive_frame(channel)
            if isinstance(frame, Spawn):
                spawns.start_soon(generation.spawn, frame, channel.take_fd())
            else:
                # ``shutdown``, a closed channel, or anything that breaks the conversation
                # (treated as the loss of the supervisor): either way, shut down.
                return isinstance(frame, Shutdown)


async def receive_frame(channel: FramedChannel) -> GuardianFrame | None:
    """The next valid frame, or None when the channel is closed, broken or garbled."""
    try:
        line = await channel.receive()
        return None if line is None else decode_guardian_frame(line)
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
        return None


async def _wait_for_release(channel: FramedChannel) -> None:
    """After ``drained``, wait for ``release`` (or the supervisor's loss)."""
    while True:
        frame = await receive_frame(channel)
        if frame is None or isinstance(frame, Release):
            return
