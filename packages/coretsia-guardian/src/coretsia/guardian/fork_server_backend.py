"""``spawn = "forkserver"``: the ``fork`` driver's workers, forked by the generation's
fork server instead of executed one interpreter each.

The guardian starts the fork server (the argv the supervisor sent in ``hello``) from its
spawner thread, like any child: it dies with the guardian (its parent-death signal) and
lives in the generation's container (started after the container, so inside its
cgroup, and inside its PID namespace if it has one). Each spawn sends it the worker's
argv and the worker's three descriptors
(:mod:`coretsia.worker_protocol.internal.fork_server`); the server closes its copies once
it forked. The worker tells its pid itself, as the kernel's credentials of its datagram,
in the guardian's own PID namespace (nothing to translate, even from inside a
namespace); it is the guardian's own child by then (born so, or re-parented to the
guardian, a subreaper, before it told), so everything else is
:class:`~coretsia.guardian.backends.ForkBackend`'s: the one reaper reaps it, the
guardian signals its group while it is unreaped.

The fork server holds no descriptor of the generation between requests (not the stop
pipe, not the fence), so it is not a process of the generation's lifetime: the shutdown
phases spare it, and it is let go (its channel closed, then SIGKILL after the budget)
once the workers are gone. If it dies before that, the generation fails with
``worker-process-host-failed`` (it is this mode's host of the workers), and every spawn
asked of it after that fails with the same reason; its workers already running are
unaffected until the shutdown that follows.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
from collections.abc import Mapping
from typing import Final

import trio

from coretsia.guardian.backends import ForkBackend
from coretsia.guardian.spawner import Spawner, SpawnRequest
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.internal.fork_server_conversation import (
    Done,
    ForkServerConversation,
    Request,
    Role,
)
from coretsia.worker_protocol.internal.guardian import Spawned, SpawnFailed
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel

REPLY_TIMEOUT_S: Final = 30.0
"""Bound on one request's answer (the fork server forks and answers in milliseconds)."""

MAX_IN_FLIGHT: Final = 16
"""Requests sent and not yet answered, at most: enough to keep the server forking, few
enough that the descriptors in flight (three a request, and the server's pipe for each
worker that has not told yet) stay far below any limit on them (an unprivileged user's
count against ``RLIMIT_NOFILE``, ``select``'s ``FD_SETSIZE`` in the server)."""


class _Request:
    """One request in flight: the worker's pid once it told; ``ended`` once it is
    answered, or the server is gone."""

    __slots__ = ("ended", "pid")

    def __init__(self) -> None:
        self.pid: int | None = None
        self.ended = trio.Event()


class ForkServerBackend(ForkBackend):
    """Workers are the guardian's children, forked by the fork server on request."""

    def __init__(
        self,
        spawner: Spawner,
        env: Mapping[str, str],
        shared_fds: tuple[int, int],
        channel: FramedChannel,
        pid: int,
    ) -> None:
        super().__init__(spawner, env, shared_fds)
        self._channel = channel
        self._conversation = ForkServerConversation(Role.GUARDIAN)
        self.pid = pid
        self.gone = trio.Event()
        """Set once the server answers no more (its channel ended, or it was reaped)."""
        self._reaped = trio.Event()
        self._unanswered: dict[bytes, _Request] = {}  # by tag
        self._tags = itertools.count()
        self._in_flight = trio.Semaphore(MAX_IN_FLIGHT)

    @classmethod
    async def start(
        cls,
        spawner: Spawner,
        env: Mapping[str, str],
        shared_fds: tuple[int, int],
        argv: tuple[str, ...],
    ) -> ForkServerBackend:
        """Start the fork server; OSError if the OS refuses (its boot is not awaited:
        a server that fails to boot answers no request, and its exit is reported)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # who sent each datagram
        try:
            pid = await spawner.spawn(SpawnRequest(argv, env, (theirs.fileno(),)))
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        channel = FramedChannel(trio.socket.from_stdlib_socket(ours))
        return cls(spawner, env, shared_fds, channel, pid)

    async def spawn(
        self, slot: int, argv: tuple[str, ...], channel_fd: int
    ) -> Spawned | SpawnFailed:
        async with self._in_flight:
            pid = await self._ask(argv, channel_fd) if not self.gone.is_set() else None
        if pid is None:
            reason = Reason.PROCESS_HOST_FAILED if self.gone.is_set() else Reason.FORK_FAILED
            return SpawnFailed(slot=slot, reason=reason)
        return Spawned(slot=slot, pid=pid)

    async def _ask(self, argv: tuple[str, ...], channel_fd: int) -> int | None:
        """One request and its answer: the worker's pid; None if the server started no
        worker (or is gone before its worker told).

        Pipelined: the request is sent at once, beside the ones still in flight; the
        server forks each as it comes, and :meth:`read_answers` gives every answer to
        its own request (by tag).

        Shielded: a spawn is never abandoned half way (its worker may be running).
        Bounded: a server that has not answered within :data:`REPLY_TIMEOUT_S` (a fork
        is milliseconds) is hung; it is SIGKILLed and never asked again, and its reap
        fails the generation.
        """
        tag = str(next(self._tags)).encode()
        data = self._conversation.send(Request(tag, argv))
        request = self._unanswered[tag] = _Request()
        with trio.CancelScope(shield=True), trio.move_on_after(REPLY_TIMEOUT_S) as waited:
            try:
                await self._channel.send(data, (channel_fd, *self._shared_fds))
            except OSError:  # the channel is broken: never asked
                self.gone.set()
                request.ended.set()
            await request.ended.wait()
        if waited.cancelled_caught and not self._reaped.is_set():
            self.gone.set()
            os.kill(self.pid, signal.SIGKILL)  # unreaped: the pid is still the server's
        del self._unanswered[tag]
        return request.pid  # a worker that told is ours even if its answer never came

    async def read_answers(self) -> None:
        """Give every answer to its request, until the channel ends (or is closed), or
        carries anything the conversation refuses (an answer to no request in flight), or
        an answer to a request given up: the server is gone."""
        try:
            while (answer := await self._channel.receive(self._conversation)) is not None:
                request = self._unanswered.get(answer.tag)
                if request is None:
                    return  # given up on (timed out): the server was killed
                if isinstance(answer, Done):
                    request.ended.set()
                else:
                    request.pid = self._channel.sender
        except ProtocolError:
            return
        finally:
            self._gone()

    def _gone(self) -> None:
        """The server answers no more: every request in flight ends unanswered."""
        self.gone.set()
        for request in self._unanswered.values():
            request.ended.set()

    def reaped(self) -> None:
        """The guardian's reaper reaped the fork server: it is asked nothing more. The
        requests in flight end at the channel's end, not now: a worker it forked may
        have told, and its word may still wait in the channel."""
        self.gone.set()
        self._reaped.set()

    def helper_pids(self) -> frozenset[int]:
        return frozenset({self.pid})

    async def close(self, budget_s: float) -> None:
        """Close the channel (the server exits at its end); SIGKILL it after the budget."""
        self._channel.close()
        with trio.move_on_after(budget_s):
            await self._reaped.wait()
        if not self._reaped.is_set():
            os.kill(self.pid, signal.SIGKILL)  # unreaped: the pid is still the server's
            await self._reaped.wait()
