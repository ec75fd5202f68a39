"""Control protocol v2: the handshake, ``status``, ``health`` and ``stop``, and the answers.

This is the public, stable part third-party tools speak. A connection carries, in order:

* the client's ``hello`` (a fresh nonce; nothing secret);
* the server's ``challenge`` (its own fresh nonce), sealed: it proves the server holds the
  credential before the client says anything more;
* the client's ``request`` (the command), sealed: the client's proof;
* the answers, each sealed: for ``status`` and ``health`` exactly one (``status``,
  ``health`` or ``error``); for ``stop`` zero or more ``stop-progress`` lines, one per
  shutdown phase entered, then the terminal ``stopped`` (every worker reaped, files
  removed, the lock released) or ``error``.

A sealed frame carries a ``mac`` beside its fields: an HMAC-SHA256, keyed by the
credential, over the whole conversation so far (see
:mod:`~coretsia.worker_protocol.control_auth`); the credential itself never travels.
Which frame may follow which, and which must be sealed, is
:mod:`~coretsia.worker_protocol.control_conversation`'s to say; this module says what one
frame may contain. A peer that cannot prove itself gets nothing more: the server closes
in silence, the client gives up. Every line is deterministic JSON (see
:mod:`coretsia.worker_protocol.framing` for the size bound). Version 1 (the credential in
the request line) is refused by both ends.
"""

from __future__ import annotations

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame, Spread
from coretsia.worker_protocol.catalogue import REASON_CODES, ErrorCode, HealthReason, Reason
from coretsia.worker_protocol.records import field
from coretsia.worker_protocol.vocabulary import (
    ENDPOINT_HASH_HEX_LEN,
    MAX_PID,
    MAX_TIMEOUT_MS,
    MAX_WORKERS,
    NONCE_HEX_LEN,
    Containment,
    ControlCommand,
    Driver,
    PoolStatus,
    ShutdownPhase,
    Transport,
)

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ClassVar, Final, TypeAlias

    Seal: TypeAlias = Callable[[bytes], str | None]
    """Given a frame's body, the ``mac`` its line carries (None: none)."""

CONTROL_VERSION: Final = 2
"""The version every control frame carries (1 sent the credential itself: refused)."""

_NONCE: Final = s.Hex(NONCE_HEX_LEN)


class Hello(Frame):
    """The client's first frame: a fresh nonce, so no earlier server proof fits this one."""

    TAG: ClassVar[str] = "hello"
    client_nonce: str = field(kind=_NONCE)


class Challenge(Frame):
    """The server's answer to ``hello``: its own fresh nonce, sealed with its proof."""

    TAG: ClassVar[str] = "challenge"
    server_nonce: str = field(kind=_NONCE)


class ControlRequest(Frame):
    """The command, sent sealed once the server has proved itself."""

    TAG: ClassVar[str] = "request"
    command: ControlCommand = field(kind=s.Choice(ControlCommand))


class PoolSummary(Frame):
    """The safe live facts about a pool that ``status`` and ``health`` both carry."""

    pool_status: PoolStatus = field(kind=s.Choice(PoolStatus))
    pid: int = field(kind=s.Int(1, MAX_PID))
    worker_count: int = field(kind=s.Int(1, MAX_WORKERS))
    ready_worker_count: int = field(kind=s.Int(0, MAX_WORKERS))
    driver: Driver = field(kind=s.Choice(Driver))
    control_transport: Transport = field(kind=s.Choice(Transport))
    endpoint_hash: str = field(kind=s.Hex(ENDPOINT_HASH_HEX_LEN))
    containment: Containment | None = field(default=None, kind=s.Omissible(s.Choice(Containment)))
    """The containment level in force (absent from a supervisor that predates it)."""
    reconnecting_worker_count: int | None = field(
        default=None, kind=s.Omissible(s.Int(1, MAX_WORKERS))
    )
    """Ready workers whose task source is reconnecting; absent while there are none."""

    def _check(self) -> None:
        s.require(self.ready_worker_count <= self.worker_count, "ready_worker_count")


MAX_COUNT: Final = 2**63 - 1
"""Bound of a count in a ``status`` (far past any real one)."""

MAX_RSS_KIB: Final = 2**32 - 1
"""Bound of one slot's resident memory in a ``status`` (4 TiB): ten digits at most, so
that 1024 slots' fit in one line (:data:`~coretsia.worker_protocol.MAX_FRAME_BYTES`)."""


class StatusResponse(Frame):
    """The answer to ``status``.

    Beside the summary (each absent from a supervisor that predates it):
    ``slot_rss_kib``, each slot's worker's resident memory in KiB, in slot order
    (``null``: no worker there now, or unreadable); ``recycles_max_requests`` and
    ``recycles_max_memory``, the workers recycled so far for each cause.
    """

    TAG: ClassVar[str] = "status"
    summary: PoolSummary = field(kind=Spread(PoolSummary))
    slot_rss_kib: tuple[int | None, ...] | None = field(
        default=None, kind=s.Omissible(s.Array(s.Nullable(s.Int(0, MAX_RSS_KIB))))
    )
    recycles_max_requests: int | None = field(default=None, kind=s.Omissible(s.Int(0, MAX_COUNT)))
    recycles_max_memory: int | None = field(default=None, kind=s.Omissible(s.Int(0, MAX_COUNT)))

    def _check(self) -> None:  # one entry per slot
        rss = self.slot_rss_kib
        s.require(rss is None or len(rss) == self.summary.worker_count, "slot_rss_kib")


class HealthResponse(Frame):
    """The answer to ``health``: healthy only when running with every slot ready."""

    TAG: ClassVar[str] = "health"
    summary: PoolSummary = field(kind=Spread(PoolSummary))
    healthy: bool = field(kind=s.Bool())
    reason: HealthReason = field(kind=s.Choice(HealthReason))

    def _check(self) -> None:  # the two must tell one story
        s.require(self.healthy is (self.reason is HealthReason.HEALTHY), "reason")


class StopProgress(Frame):
    """Sent when shutdown enters a phase; ``budget_ms`` is that phase's deadline."""

    TAG: ClassVar[str] = "stop-progress"
    phase: ShutdownPhase = field(kind=s.Choice(ShutdownPhase))
    budget_ms: int = field(kind=s.Int(0, MAX_TIMEOUT_MS))


class StoppedResponse(Frame):
    """The terminal answer to ``stop``: the generation is gone and the lock is free."""

    TAG: ClassVar[str] = "stopped"


_CODES: Final = s.Choice(ErrorCode)
_REASONS: Final = s.Choice(Reason)


class _CodedReason(s.Kind):
    """A catalogue reason travelling with its ``code``, which must agree with it."""

    __slots__ = ()

    def keys(self, name: str) -> frozenset[str]:
        return frozenset(("code", name))

    def load(self, obj: s.JsonObject, name: str) -> object:
        code = _CODES.read(obj["code"], "$.code")
        reason = _REASONS.read(obj[name], f"$.{name}")
        s.require(isinstance(reason, Reason) and REASON_CODES[reason] is code, name)
        return reason

    def dump(self, value: object, name: str, obj: s.JsonObject) -> None:
        obj[name] = _REASONS.write(value, f"$.{name}")  # refuses anything but a Reason
        if isinstance(value, Reason):
            obj["code"] = REASON_CODES[value].value


class ErrorResponse(Frame):
    """A failure, as its catalogue reason (the code travels too and must agree)."""

    TAG: ClassVar[str] = "error"
    reason: Reason = field(kind=_CodedReason())

    @property
    def code(self) -> ErrorCode:
        """The code the reason belongs to."""
        return REASON_CODES[self.reason]


ControlResponse = StatusResponse | HealthResponse | StopProgress | StoppedResponse | ErrorResponse

ClientFrame = Hello | ControlRequest
"""What a client sends."""

ServerFrame = Challenge | ControlResponse
"""What a server sends."""

_CLIENT: Final = Codec(CONTROL_VERSION, ClientFrame.__args__, sealable=True)
_SERVER: Final = Codec(CONTROL_VERSION, ServerFrame.__args__, sealable=True)


def encode_request(frame: ClientFrame, seal: Seal | None = None) -> bytes:
    """Encode a client's line, sealed by ``seal``; anything off is a LocalProtocolError."""
    return _CLIENT.encode(frame, seal)


def decode_request(line: bytes) -> ClientFrame:
    """Decode a client's line (its ``mac`` checked for shape only, and dropped).

    Anything off is a :class:`RemoteProtocolError`. What a ``mac`` proves is the
    conversation's to check: see :func:`open_request`.
    """
    frame: ClientFrame = _CLIENT.decode(line)
    return frame


def open_request(line: bytes) -> tuple[ClientFrame, bytes, str | None]:
    """Decode a client's line into the frame, its body and its ``mac`` (not verified)."""
    return _CLIENT.open(line)


def encode_response(frame: ServerFrame, seal: Seal | None = None) -> bytes:
    """Encode a server's line, sealed by ``seal``, checked by the rules the client applies."""
    return _SERVER.encode(frame, seal)


def decode_response(line: bytes) -> ServerFrame:
    """Decode a server's line (its ``mac`` checked for shape only, and dropped).

    Anything off is a :class:`RemoteProtocolError`. What a ``mac`` proves is the
    conversation's to check: see :func:`open_response`.
    """
    frame: ServerFrame = _SERVER.decode(line)
    return frame


def open_response(line: bytes) -> tuple[ServerFrame, bytes, str | None]:
    """Decode a server's line into the frame, its body and its ``mac`` (not verified)."""
    return _SERVER.open(line)
