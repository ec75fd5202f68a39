"""The worker channel's conversation, sans-IO: what each end may say, and when. Internal.

:mod:`~coretsia.worker_protocol.worker_channel` says what one frame may contain; this
module holds the order, for both ends of the channel between a worker and its supervisor:
:class:`SupervisorConversation` reads a worker's frames and grants its retirement,
:class:`WorkerConversation` sends the worker's frames and reads the grant. Like the control
conversation (:mod:`~coretsia.worker_protocol.control_conversation`), each is fed bytes
with ``receive_data`` and asked for the next frame with ``next_event``.

The rules (all of them live here; the I/O loops hold none). Each end checks them on
what it sends (breaking one is its own bug:
:class:`~coretsia.worker_protocol.exceptions.LocalProtocolError`) and on what it receives
(the peer's: :class:`~coretsia.worker_protocol.exceptions.RemoteProtocolError`):

1. ``ready`` comes at most once and without a token (the inherited descriptor already
   proves who speaks). A second one, or one with a token, breaks readiness.
2. ``failed``, ``task-failed``, ``task-lease-lost`` and ``shutdown-request`` may come at
   any time.
3. ``heartbeat``, ``source-unavailable`` and ``source-available`` may come at any time
   after ``ready``, as often as the worker likes; before ``ready`` they break readiness
   (the start timeout watches a booting worker, and its source's ``assert_ready``).
4. ``retiring`` asks once. The worker sends it once; a repeated one the supervisor
   receives is the same request, not reported again.
5. ``retire`` answers a ``retiring``, once: the supervisor never sends it unasked and a
   worker refuses one it did not ask for.
6. A frame that breaks a rule, or does not decode, ends the reading: every later
   ``next_event`` raises again. For the supervisor, what it means depends on when
   (:meth:`SupervisorConversation.failure`): a readiness failure before ``ready`` or
   about ``ready``, a lifecycle failure after.

A handshake (a token-carrying first frame where no descriptor can be inherited, or a
mutual authentication) fits as one more state before :attr:`Readiness.BOOTING`.

Imported on the worker boot path: no ``typing`` at run time, nothing beyond the frames.
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.framing import LineFramer, Need
from coretsia.worker_protocol.worker_channel import (
    Heartbeat,
    Ready,
    Retire,
    Retiring,
    SourceAvailable,
    SourceUnavailable,
    decode_supervisor_frame,
    decode_worker_frame,
    encode_retire,
    encode_worker_frame,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coretsia.worker_protocol.exceptions import WorkerError
    from coretsia.worker_protocol.worker_channel import WorkerFrame


_AFTER_READY = (Heartbeat, SourceUnavailable, SourceAvailable)
"""The frames only a ready worker sends (rule 3)."""


class Readiness(enum.Enum):
    """Where a worker stands with its ``ready`` frame (rule 1)."""

    BOOTING = "booting"
    """Not ready yet."""
    READY = "ready"
    """``ready`` came."""
    BROKEN = "broken"
    """A frame broke a rule (rule 6): nothing more is read."""


class Retirement(enum.Enum):
    """Where a worker stands with its retirement (rules 4 and 5)."""

    NOT_ASKED = "not-asked"
    ASKED = "asked"
    """``retiring`` went; ``retire`` may answer it."""
    GRANTED = "granted"
    """``retire`` went: the worker exits after its current task."""


class SupervisorConversation:
    """The supervisor's end of one worker's channel."""

    __slots__ = ("_framer", "_readiness_broken", "readiness", "retirement")

    def __init__(self) -> None:
        self._framer = LineFramer()
        self.readiness = Readiness.BOOTING
        self.retirement = Retirement.NOT_ASKED
        self._readiness_broken = False

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the worker; ``b""`` means it closed the channel."""
        self._framer.receive_data(data)

    def next_event(self) -> WorkerFrame | Need:
        """The next frame the supervisor must act on, or what is needed first."""
        if self.readiness is Readiness.BROKEN:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        was_booting = self.readiness is Readiness.BOOTING
        try:
            while True:
                line = self._framer.next_frame()
                if isinstance(line, Need):
                    return line
                frame = decode_worker_frame(line)
                if isinstance(frame, Ready):
                    self._ready(frame)
                elif isinstance(frame, _AFTER_READY):
                    if self.readiness is not Readiness.READY:
                        raise RemoteProtocolError(Reason.FRAME_UNEXPECTED)  # rule 3
                elif isinstance(frame, Retiring):
                    if self.retirement is not Retirement.NOT_ASKED:
                        continue  # rule 4: the same request again
                    self.retirement = Retirement.ASKED
                return frame
        except ProtocolError:
            self._readiness_broken = self._readiness_broken or was_booting
            self.readiness = Readiness.BROKEN
            raise

    def _ready(self, frame: Ready) -> None:
        if frame.token is not None or self.readiness is not Readiness.BOOTING:
            self._readiness_broken = True
            raise RemoteProtocolError(Reason.FRAME_UNEXPECTED)
        self.readiness = Readiness.READY

    def send_retire(self) -> bytes:
        """The ``retire`` grant's bytes; only in answer to ``retiring``, once (rule 5)."""
        if self.retirement is not Retirement.ASKED:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        self.retirement = Retirement.GRANTED
        return encode_retire()

    def failure(self) -> WorkerError:
        """What a broken conversation means for the pool (rule 6)."""
        if self._readiness_broken:
            return WorkerStartFailedError(Reason.READINESS_INVALID)
        return WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED)


class WorkerConversation:
    """The worker's end of its channel: the frames it sends, and the grant it reads."""

    __slots__ = ("_broken", "_framer", "readiness", "retirement")

    def __init__(self) -> None:
        self._framer = LineFramer()
        self.readiness = Readiness.BOOTING
        self.retirement = Retirement.NOT_ASKED
        self._broken = False

    @property
    def ready(self) -> bool:
        """Whether ``ready`` went."""
        return self.readiness is Readiness.READY

    @property
    def asked(self) -> bool:
        """Whether ``retiring`` went (the grant may then come)."""
        return self.retirement is not Retirement.NOT_ASKED

    def send(self, frame: WorkerFrame) -> bytes:
        """The bytes of ``frame``, if the rules let the worker say it now (rules 1 to 4)."""
        data = encode_worker_frame(frame)
        if isinstance(frame, Ready):
            if frame.token is not None or self.readiness is not Readiness.BOOTING:
                raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
            self.readiness = Readiness.READY
        elif isinstance(frame, _AFTER_READY):
            if self.readiness is not Readiness.READY:
                raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        elif isinstance(frame, Retiring):
            if self.asked:
                raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
            self.retirement = Retirement.ASKED
        return data

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from the supervisor; ``b""`` means it closed the channel."""
        self._framer.receive_data(data)

    def next_event(self) -> Retire | Need:
        """The ``retire`` grant, or what is needed first; anything else raises (rule 5)."""
        if self._broken:
            raise LocalProtocolError(Reason.FRAME_UNEXPECTED)
        try:
            line = self._framer.next_frame()
            if isinstance(line, Need):
                return line
            frame = decode_supervisor_frame(line)
            if self.retirement is not Retirement.ASKED:
                raise RemoteProtocolError(Reason.FRAME_UNEXPECTED)
        except ProtocolError:
            self._broken = True
            raise
        self.retirement = Retirement.GRANTED
        return frame
