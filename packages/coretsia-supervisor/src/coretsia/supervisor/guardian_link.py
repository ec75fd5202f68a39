"""The supervisor's end of the guardian channel: launch, handshake, requests, events.

The guardian is the supervisor's only child. It is started in a session of its own (so a
terminal's Ctrl-C never reaches it) with one inherited socket, usually early, before the
supervisor imported trio (see :mod:`coretsia.supervisor.guardian_process`); the
supervisor reaps it by its pid alone, its one way of reaping (it has no other children).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import trio

from coretsia.supervisor._version import __version__
from coretsia.supervisor.guardian_process import GuardianProcess, take_early
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    ProtocolError,
    WorkerLifecycleFailedError,
    error_for,
)
from coretsia.worker_protocol.internal.guardian import (
    GuardianFrame,
    Hello,
    Locked,
    Refused,
    Welcome,
    decode_guardian_frame,
    encode_guardian_frame,
)
from coretsia.worker_protocol.internal.handshake import check_peer_version
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel

HANDSHAKE_TIMEOUT_S: Final = 30.0
"""Bound on the guardian's start-up, handshake and lock claim (an interpreter and trio)."""

EXIT_TIMEOUT_S: Final = 5.0
"""Bound on the guardian's exit after it released the lock."""


class GuardianLink:
    """A running guardian and the channel to it."""

    def __init__(self, process: GuardianProcess, channel: FramedChannel) -> None:
        self.process = process
        self._channel = channel

    @classmethod
    async def launch(cls, root: Path, hello: Hello, env: Mapping[str, str]) -> GuardianLink:
        """Adopt the early guardian (or start one) and complete the handshake and lock claim.

        Raises :class:`WorkerAlreadyRunningError` when another generation holds the lock.
        """
        process = take_early(root, env)
        if process is None:
            try:
                process = GuardianProcess.start(root, env)
            except OSError as exc:
                raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED) from exc
        link = cls(process, FramedChannel(trio.socket.from_stdlib_socket(process.channel)))
        try:
            with trio.fail_after(HANDSHAKE_TIMEOUT_S):
                await link._handshake(hello)
        except BaseException:
            await link.abandon()
            raise
        return link

    async def _handshake(self, hello: Hello) -> None:
        try:
            await self.send(hello)
            welcome = await self.receive()
            if isinstance(welcome, Refused):
                raise error_for(welcome.reason)
            if not isinstance(welcome, Welcome):
                raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED)
            check_peer_version(__version__, welcome.peer_version)
            locked = await self.receive()
        except trio.TooSlowError:
            raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED) from None
        if isinstance(locked, Refused):
            raise error_for(locked.reason)
        if not isinstance(locked, Locked):
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_LOCK_FAILED)

    async def send(self, frame: GuardianFrame, fds: tuple[int, ...] = ()) -> None:
        """Send one frame; a lost guardian is a lifecycle failure.

        Shielded: a cancellation between two partial writes would cut the frame and
        corrupt the channel. The guardian reads its channel at all times, so the send is
        bounded by the socket buffer; a guardian gone makes it fail, not hang.
        """
        try:
            with trio.CancelScope(shield=True):
                await self._channel.send(encode_guardian_frame(frame), fds)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED) from exc

    async def receive(self) -> GuardianFrame | None:
        """The next frame, or None once the guardian is gone (or spoke garbage)."""
        try:
            line = await self._channel.receive()
            return None if line is None else decode_guardian_frame(line)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
            return None

    async def wait_exit(self, timeout: float = EXIT_TIMEOUT_S) -> bool:
        """Reap the guardian; False if it did not exit in time (it is then left alone)."""
        with trio.move_on_after(timeout):
            await self.process.wait()
            return True
        return False

    async def abandon(self, timeout: float = EXIT_TIMEOUT_S) -> bool:
        """Close our end: the guardian then contains the generation and exits on its own.

        Closing the channel is how the supervisor's death looks to the guardian, so this
        is the one containment path for every abnormal end. The guardian is never
        signalled: while it holds the lock it is still cleaning up, and killing it would
        free the lock before the generation is gone. True once it has exited.
        """
        self._channel.close()
        return await self.wait_exit(timeout)

    def close(self) -> None:
        """Close the channel (after the guardian released the lock)."""
        self._channel.close()
