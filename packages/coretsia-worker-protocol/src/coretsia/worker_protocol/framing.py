"""Newline framing with a hard size bound, sans-IO in the manner of h11.

Every stream of the protocol carries one JSON object per line. The framer only buffers
bytes and cuts lines; it never parses. It is the one frame reader of every stream
channel: the conversations (one engine,
:mod:`~coretsia.worker_protocol.conversation_engine`, one table per channel) decode what
it cuts.

The buffer is bounded twice. A line longer than ``max_frame_bytes`` is refused while
buffering, before any decoding, so a peer that never sends a newline costs at most the
limit and is told so with ``worker-frame-oversized``; and the framer refuses to be fed
while it already holds more than ``max_frame_bytes``, so a reader that forgets to ask
:meth:`LineFramer.next_frame` cannot grow it either: it never holds more than
``max_frame_bytes`` plus the last chunk fed.
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final

MAX_FRAME_BYTES: Final = 16 * 1024
"""Largest frame, newline excluded, any channel accepts (control, readiness, internal)."""


class Need(enum.Enum):
    """What :meth:`LineFramer.next_frame` (and a conversation's ``next_event``) returns
    when it has no whole frame."""

    DATA = "need-data"
    """Feed more bytes with :meth:`LineFramer.receive_data`."""
    CLOSED = "closed"
    """The peer closed the stream cleanly, between frames."""


class LineFramer:
    """Cuts a byte stream into frames; ``receive_data(b"")`` marks the end of the stream."""

    __slots__ = ("_buffer", "_closed", "_max", "_scanned")

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._scanned = 0
        self._closed = False
        self._max = max_frame_bytes

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the peer; an empty ``data`` means end of stream.

        Feed it when :meth:`next_frame` asks for data: bytes fed while more than
        ``max_frame_bytes`` are still buffered are our own bug (:class:`LocalProtocolError`).
        """
        if self._closed:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        if len(self._buffer) > self._max:
            raise LocalProtocolError(Reason.FRAME_OVERSIZED)
        if data:
            self._buffer += data
        else:
            self._closed = True

    def next_frame(self) -> bytes | Need:
        """Return the next whole frame (without its newline), or what is needed first."""
        newline = self._buffer.find(b"\n", self._scanned)
        if newline < 0:
            if len(self._buffer) > self._max:
                raise RemoteProtocolError(Reason.FRAME_OVERSIZED)
            if self._closed:
                if self._buffer:
                    raise RemoteProtocolError(Reason.FRAME_TRUNCATED)
                return Need.CLOSED
            self._scanned = len(self._buffer)
            return Need.DATA
        if newline > self._max:
            raise RemoteProtocolError(Reason.FRAME_OVERSIZED)
        frame = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        self._scanned = 0
        return frame

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buffer)
