"""The supervisor's end of the guardian channel: launch, handshake, requests, events.

The guardian is the supervisor's only child. It is started in a session of its own (so a
terminal's Ctrl-C never reaches it) with one inherited socket, usually early, before the
supervisor imported trio (see :mod:`coretsia.supervisor.daemon.guardian_process`); the
supervisor reaps it by its pid alone, its one way of reaping (it has no other children).
Which frames may travel, and when, is the business of the channel's conversation
(:class:`~coretsia.worker_protocol.internal.guardian_conversation.SupervisorEnd`): this
module only moves them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import trio

from coretsia.supervisor.daemon.guardian_process import EarlyGuardian, GuardianProcess
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    ProtocolError,
    WorkerLifecycleFailedError,
    error_for,
)
from coretsia.worker_protocol.internal.guardian import GuardianFrame, Hello
from coretsia.worker_protocol.internal.guardian_conversation import GuardianState, SupervisorEnd
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel
from coretsia.worker_protocol.internal.runtime.spawn_errors import spawn_failure

HANDSHAKE_TIMEOUT_S: Final = 30.0
"""Bound on the guardian's start-up, handshake and lock claim (an interpreter and trio)."""

EXIT_TIMEOUT_S: Final = 5.0
"""Bound on the guardian's exit after it released the lock."""


class GuardianLink:
    """A running guardian and the channel to it."""

    def __init__(self, process: GuardianProcess, channel: FramedChannel) -> None:
        self.process = process
        self._channel = channel
        self._conversation = SupervisorEnd()

    @classmethod
    async def launch(
        cls, root: Path, hello: Hello, env: Mapping[str, str], early: EarlyGuardian | None = None
    ) -> GuardianLink:
        """Adopt the early guardian (or start one) and complete the handshake and lock claim.

        ``early`` is ``start``'s guardian, spawned before the supervisor imported trio; it
        is adopted only if it was started for exactly this root and environment.

        Raises :class:`WorkerAlreadyRunningError` when another generation holds the lock.
        """
        process = None if early is None else early.take(root, env)
        if process is None:
            try:
                process = GuardianProcess.start(root, env)
            except OSError as exc:
                raise error_for(spawn_failure(exc, Reason.PROCESS_HOST_FAILED)) from exc
        link = cls(process, FramedChannel(trio.socket.from_stdlib_socket(process.channel)))
        try:
            with trio.fail_after(HANDSHAKE_TIMEOUT_S):
                await link._handshake(hello)
        except trio.TooSlowError:
            await link.abandon()
            raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED) from None
        except BaseException:
            await link.abandon()
            raise
        return link

    async def _handshake(self, hello: Hello) -> None:
        """``hello``, then the guardian's answers until it holds the lock.

        The conversation checks them: a refusal raises its own error, a guardian of
        another version ``worker-peer-version-mismatch``; an end or a broken rule is the
        failure of the step it interrupted. A ``hello`` already written before trio (the
        very same bytes: see :meth:`.guardian_process.EarlyGuardian.send`) is
        not written again.
        """
        data = self._conversation.send(hello)
        if self.process.sent is None:
            await self._write(data)
        elif self.process.sent != data:  # another hello went early: not this generation's
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED)
        while self._conversation.state is not GuardianState.RUNNING:
            if await self.receive() is None:
                raise self._conversation.failure()

    async def send(self, frame: GuardianFrame, fds: tuple[int, ...] = ()) -> None:
        """Send one frame; a lost guardian is a lifecycle failure.

        Shielded: a cancellation between two partial writes would cut the frame and
        corrupt the channel. The guardian reads its channel at all times, so the send is
        bounded by the socket buffer; a guardian gone makes it fail, not hang.
        """
        await self._write(self._conversation.send(frame), fds)

    async def _write(self, data: bytes, fds: tuple[int, ...] = ()) -> None:
        try:
            with trio.CancelScope(shield=True):
                await self._channel.send(data, fds)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise WorkerLifecycleFailedError(Reason.PROCESS_HOST_FAILED) from exc

    async def receive(self) -> GuardianFrame | None:
        """The next frame, or None once the guardian is gone (or broke a rule).

        The handshake's own outcomes (a refusal, another version) are raised.
        """
        try:
            return await self._channel.receive(self._conversation)
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
