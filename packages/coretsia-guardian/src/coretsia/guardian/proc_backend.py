"""The ``proc`` driver's backend: workers are children of the proc host, over its channel.

The guardian spawns one ``coretsia-proc-host`` and asks it, over the proc-host channel,
to spawn, signal and finally forget the workers; the proc host owns their ``Popen``
handles (and, on Windows, a Job Object). Workers' exits reach the guardian as ``exited``
frames from the proc host. If the proc host dies, its workers die with it (their
parent-death signal) and re-parent to the guardian, a subreaper, which reaps them.

Imported only when the driver is ``proc`` (see :mod:`coretsia.guardian.runtime`): a
``fork`` guardian never loads this module nor the proc-host frames.
"""

from __future__ import annotations

import math
import signal
import socket
import sys
from collections.abc import Mapping
from typing import Final

import trio

from coretsia.guardian._version import __version__
from coretsia.guardian.backends import ExitReport
from coretsia.guardian.spawner import Spawner, SpawnRequest
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    ProtocolError,
    WorkerLifecycleFailedError,
    error_for,
)
from coretsia.worker_protocol.internal.guardian import Exited, Spawn, Spawned, SpawnFailed
from coretsia.worker_protocol.internal.proc_host import (
    HostHello,
    ProcHostFrame,
    Quit,
    Signal,
    SignalName,
)
from coretsia.worker_protocol.internal.proc_host_conversation import DriverEnd, HostState
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel
from coretsia.worker_protocol.internal.runtime.spawn_errors import spawn_failure

HOST_HANDSHAKE_TIMEOUT_S: Final = 30.0

_LOST: Final = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)


class ProcBackend:
    """Workers are children of the proc host, driven over its channel."""

    def __init__(
        self, channel: FramedChannel, conversation: DriverEnd, pid: int, on_exit: ExitReport
    ) -> None:
        self._channel = channel
        self._conversation = conversation
        self.pid = pid
        self._on_exit = on_exit
        self._pending: dict[int, trio.MemorySendChannel[Spawned | SpawnFailed]] = {}
        self.lost = trio.Event()
        # Unbounded, like the guardian's outbox: a shutdown phase queues one Signal per
        # worker at once (up to 1,024), and a dropped one is a worker never signalled.
        self._send_queue, self._send_reader = trio.open_memory_channel[bytes](math.inf)

    @classmethod
    async def start(
        cls,
        spawner: Spawner,
        env: Mapping[str, str],
        shared_fds: tuple[int, int],
        on_exit: ExitReport,
    ) -> ProcBackend:
        """Spawn the proc host and complete its handshake.

        Raises ``worker-peer-version-mismatch`` when the proc host is of another version
        (whichever side notices it: the supervisor must be able to say so), and
        ``worker-process-host-failed`` for any other failure.
        """
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as exc:  # out of descriptors
            raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED) from exc
        try:
            argv = (sys.executable, "-m", "coretsia.proc_host")
            pid = await spawner.spawn(SpawnRequest(argv, env, (theirs.fileno(), *shared_fds)))
        except OSError as exc:  # refused (the spawn itself cannot be cancelled half way)
            ours.close()
            raise error_for(spawn_failure(exc, Reason.PROCESS_HOST_FAILED)) from exc
        finally:
            theirs.close()
        channel = FramedChannel(trio.socket.from_stdlib_socket(ours))
        conversation = DriverEnd()
        try:
            await _handshake(channel, conversation)
        except BaseException:
            channel.close()  # the proc host sees the end of its channel and exits
            raise
        return cls(channel, conversation, pid, on_exit)

    async def run(self) -> None:
        """Pump frames both ways until the proc host is gone; run in the nursery."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._write)
            try:
                while True:
                    frame: ProcHostFrame | None = await self._channel.receive(self._conversation)
                    if frame is None:
                        break
                    self._dispatch(frame)
            except ProtocolError:
                pass
            self.lost.set()
            for pending in self._pending.values():
                pending.close()
            nursery.cancel_scope.cancel()

    def _dispatch(self, frame: ProcHostFrame) -> None:
        if isinstance(frame, (Spawned, SpawnFailed)):
            pending = self._pending.pop(frame.slot, None)
            if pending is not None:
                pending.send_nowait(frame)
        elif isinstance(frame, Exited):
            self._on_exit(frame)

    def _encode(self, frame: ProcHostFrame) -> bytes:
        return self._conversation.send(frame)

    async def _write(self) -> None:
        async for data in self._send_reader:
            try:
                await self._channel.send(data)
            except _LOST:
                return

    async def spawn(
        self, slot: int, argv: tuple[str, ...], channel_fd: int
    ) -> Spawned | SpawnFailed:
        failed = SpawnFailed(slot=slot, reason=Reason.PROCESS_HOST_FAILED)
        if self.lost.is_set():
            return failed
        send, receive = trio.open_memory_channel[Spawned | SpawnFailed](1)
        self._pending[slot] = send
        try:
            await self._channel.send(self._encode(Spawn(slot=slot, argv=argv)), (channel_fd,))
        except _LOST:
            self._pending.pop(slot, None)
            return failed
        try:
            return await receive.receive()
        except trio.EndOfChannel:
            return failed

    def signal(self, slot: int, pid: int, sig: signal.Signals) -> None:
        name = SignalName.KILL if sig == signal.SIGKILL else SignalName.TERM
        try:
            self._send_queue.send_nowait(self._encode(Signal(slot=slot, signal=name)))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the proc host is gone: its workers die of their parent-death signal

    def helper_pids(self) -> frozenset[int]:
        return frozenset({self.pid})

    async def close(self, budget_s: float) -> None:
        """Ask the proc host to quit and wait (bounded) for its channel to close."""
        try:
            self._send_queue.send_nowait(self._encode(Quit()))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        with trio.move_on_after(budget_s):
            await self.lost.wait()
        self._channel.close()


async def _handshake(channel: FramedChannel, conversation: DriverEnd) -> None:
    """``host-hello``, then a ``welcome`` of our own version; raises WorkerError otherwise.

    The conversation raises ``worker-peer-version-mismatch`` whichever side noticed it;
    any other end of the handshake is ``worker-process-host-failed``.
    """
    with trio.move_on_after(HOST_HANDSHAKE_TIMEOUT_S):
        try:
            await channel.send(conversation.send(HostHello(peer_version=__version__)))
            while conversation.state is HostState.WELCOME:
                if await channel.receive(conversation) is None:
                    break
        except (*_LOST, ProtocolError):
            pass
    if conversation.state is not HostState.RUNNING:
        raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED)
