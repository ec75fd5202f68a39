"""Control protocol v1: ``status``, ``health`` and ``stop``, and their answers.

This is the public, stable part third-party tools speak. A connection carries one request
line from the client and then answer lines from the supervisor:

* ``status`` and ``health``: exactly one answer (``status``, ``health`` or ``error``);
* ``stop``: zero or more ``stop-progress`` lines, one per shutdown phase entered, then the
  terminal ``stopped`` (every worker reaped, files removed, the lock released) or
  ``error``.

A request whose credential is missing, malformed or wrong gets no answer at all: the
supervisor closes the connection. Every line is deterministic JSON (see
:mod:`coretsia.worker_protocol.framing` for the size bound).
"""

from __future__ import annotations

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame, Spread
from coretsia.worker_protocol.catalogue import REASON_CODES, ErrorCode, HealthReason, Reason
from coretsia.worker_protocol.records import field
from coretsia.worker_protocol.vocabulary import (
    CREDENTIAL_HEX_LEN,
    ENDPOINT_HASH_HEX_LEN,
    MAX_PID,
    MAX_TIMEOUT_MS,
    MAX_WORKERS,
    ControlCommand,
    Driver,
    PoolStatus,
    ShutdownPhase,
    Transport,
)

# Not ``from typing import ...``: ``status`` is a Kubernetes exec probe, where importing
# typing costs milliseconds; type checkers honour a module-level TYPE_CHECKING.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Final

CONTROL_VERSION: Final = 1
"""The version every control frame carries."""


class ControlRequest(Frame):
    """One request; the credential is kept out of ``repr`` so it cannot reach a log."""

    command: ControlCommand = field(kind=s.Choice(ControlCommand))
    credential: str = field(kind=s.Hex(CREDENTIAL_HEX_LEN), secret=True)


class PoolSummary(Frame):
    """The safe live facts about a pool that ``status`` and ``health`` both carry."""

    pool_status: PoolStatus = field(kind=s.Choice(PoolStatus))
    pid: int = field(kind=s.Int(1, MAX_PID))
    worker_count: int = field(kind=s.Int(1, MAX_WORKERS))
    ready_worker_count: int = field(kind=s.Int(0, MAX_WORKERS))
    driver: Driver = field(kind=s.Choice(Driver))
    control_transport: Transport = field(kind=s.Choice(Transport))
    endpoint_hash: str = field(kind=s.Hex(ENDPOINT_HASH_HEX_LEN))

    def _check(self) -> None:
        s.require(self.ready_worker_count <= self.worker_count, "ready_worker_count")


class StatusResponse(Frame):
    """The answer to ``status``."""

    TAG: ClassVar[str] = "status"
    summary: PoolSummary = field(kind=Spread(PoolSummary))


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

_REQUEST: Final = Codec(CONTROL_VERSION, (ControlRequest,), tagged=False)
_RESPONSE: Final = Codec(CONTROL_VERSION, ControlResponse.__args__)


def encode_request(request: ControlRequest) -> bytes:
    """Encode a request line; a malformed credential is a :class:`LocalProtocolError`."""
    return _REQUEST.encode(request)


def decode_request(line: bytes) -> ControlRequest:
    """Decode a request line; anything off is a :class:`RemoteProtocolError`."""
    request: ControlRequest = _REQUEST.decode(line)
    return request


def encode_response(response: ControlResponse) -> bytes:
    """Encode an answer line, checked by the same rules the client applies."""
    return _RESPONSE.encode(response)


def decode_response(line: bytes) -> ControlResponse:
    """Decode an answer line; anything off is a :class:`RemoteProtocolError`."""
    response: ControlResponse = _RESPONSE.decode(line)
    return response
