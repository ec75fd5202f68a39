"""How the guardian starts and signals workers, per process driver.

``fork``: the guardian itself spawns each worker with ``posix_spawn`` from its spawner
thread; workers are its children, reaped by its one ``waitpid`` loop, signalled as process
groups while unreaped.

``proc``: the guardian spawns one ``coretsia-proc-host`` and asks it, over the proc-host
channel, to spawn, signal and finally forget the workers; the proc host owns their
``Popen`` handles (and, on Windows, a Job Object). Workers' exits reach the guardian as
``exited`` frames from the proc host. If the proc host dies, its workers die with it
(their parent-death signal) and re-parent to the guardian, a subreaper, which reaps them.

Both present the same small surface to :mod:`coretsia.guardian.runtime`.
"""

from __future__ import annotations

import math
import os
import signal
import sys
from collections.abc import Callable, Mapping
from typing import Final, Protocol

import trio

from coretsia.guardian._version import __version__
from coretsia.guardian.channel import FramedChannel
from coretsia.guardian.spawner import Spawner, SpawnRequest
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.internal.guardian import Exited, Spawn, Spawned, SpawnFailed, Welcome
from coretsia.worker_protocol.internal.proc_host import (
    HostHello,
    ProcHostFrame,
    Quit,
    Signal,
    SignalName,
    decode_proc_host_frame,
    encode_proc_host_frame,
)

HOST_HANDSHAKE_TIMEOUT_S: Final = 30.0

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
        except OSError:
            return SpawnFailed(slot=slot, reason=Reason.FORK_FAILED)
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


class ProcBackend:
    """Workers are children of the proc host, driven over its channel."""

    def __init__(self, channel: FramedChannel, pid: int, on_exit: ExitReport) -> None:
        self._channel = channel
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
        """Spawn the proc host and complete its handshake; raises OSError on failure."""
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            argv = (sys.executable, "-m", "coretsia.proc_host")
            pid = await spawner.spawn(SpawnRequest(argv, env, (theirs.fileno(), *shared_fds)))
        finally:
            theirs.close()
        channel = FramedChannel(trio.socket.from_stdlib_socket(ours))
        backend = cls(channel, pid, on_exit)
        with trio.move_on_after(HOST_HANDSHAKE_TIMEOUT_S):
            await channel.send(encode_proc_host_frame(HostHello(peer_version=__version__)))
            line = await channel.receive()
            if line is not None:
                welcome = decode_proc_host_frame(line)
                if isinstance(welcome, Welcome) and welcome.peer_version == __version__:
                    return backend
        channel.close()
        raise OSError

    async def run(self) -> None:
        """Pump frames both ways until the proc host is gone; run in the nursery."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._write)
            try:
                while True:
                    line = await self._channel.receive()
                    if line is None:
                        break
                    self._dispatch(decode_proc_host_frame(line))
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
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

    async def _write(self) -> None:
        async for data in self._send_reader:
            try:
                await self._channel.send(data)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
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
            await self._channel.send(
                encode_proc_host_frame(Spawn(slot=slot, argv=argv)), (channel_fd,)
            )
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            self._pending.pop(slot, None)
            return failed
        try:
            return await receive.receive()
        except trio.EndOfChannel:
            return failed

    def signal(self, slot: int, pid: int, sig: signal.Signals) -> None:
        name = SignalName.KILL if sig == signal.SIGKILL else SignalName.TERM
        try:
            self._send_queue.send_nowait(encode_proc_host_frame(Signal(slot=slot, signal=name)))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the proc host is gone: its workers die of their parent-death signal

    def helper_pids(self) -> frozenset[int]:
        return frozenset({self.pid})

    async def close(self, budget_s: float) -> None:
        """Ask the proc host to quit and wait (bounded) for its channel to close."""
        try:
            self._send_queue.send_nowait(encode_proc_host_frame(Quit()))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        with trio.move_on_after(budget_s):
            await self.lost.wait()
        self._channel.close()
