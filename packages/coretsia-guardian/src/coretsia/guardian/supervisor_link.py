"""The guardian's end of its channel to the supervisor: the transport and the conversation.

Every frame the guardian reads or says goes through one
:class:`~coretsia.worker_protocol.internal.guardian_conversation.GuardianEnd`, which
holds the channel's order; the runtime holds none of it. A supervisor that is gone, or
that breaks a rule, reads as the end of the channel (the conversation then stands for its
``shutdown`` and ``release``), and what the guardian still says to it is lost without a
word: the guardian contains the generation all the same.
"""

from __future__ import annotations

from typing import Final

import trio

from coretsia.guardian._version import __version__
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.internal.guardian import GuardianFrame
from coretsia.worker_protocol.internal.guardian_conversation import GuardianEnd
from coretsia.worker_protocol.internal.runtime.channel import FramedChannel

_LOST: Final = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)


class SupervisorLink:
    """The inherited channel and the rules of what travels on it."""

    def __init__(self, channel: FramedChannel) -> None:
        self._channel = channel
        self.conversation = GuardianEnd(__version__)

    @classmethod
    def from_fd(cls, fd: int) -> SupervisorLink:
        """Adopt the channel the supervisor passed down."""
        return cls(FramedChannel.from_fd(fd))

    def encode(self, frame: GuardianFrame) -> bytes:
        """``frame``'s bytes, in the conversation's order, for a queue to send later."""
        return self.conversation.send(frame)

    async def send(self, frame: GuardianFrame) -> None:
        """Say ``frame`` now."""
        await self.send_encoded(self.encode(frame))

    async def send_encoded(self, data: bytes) -> None:
        """Send bytes :meth:`encode` made; to a supervisor that is gone, they are lost."""
        try:
            await self._channel.send(data)
        except _LOST:
            pass

    async def receive(self) -> GuardianFrame | None:
        """The supervisor's next frame; None once it is gone (or broke a rule).

        A ``hello`` of another version raises ``worker-peer-version-mismatch``.
        """
        try:
            return await self._channel.receive(self.conversation)
        except ProtocolError:
            return None

    def take_fd(self) -> int | None:
        """The descriptor that came with the last ``spawn`` (see ``FramedChannel``)."""
        return self._channel.take_fd()

    def close(self) -> None:
        """Close the channel and every descriptor received but never taken."""
        self._channel.close()
