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
from coretsia.worker_protocol._frozen import Frozen
from coretsia.worker_protocol.catalogue import REASON_CODES, ErrorCode, HealthReason, Reason
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
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
    from typing import Final

CONTROL_VERSION: Final = 1
"""The version every control frame carries."""

_REQUEST_KEYS: Final = frozenset({"version", "command", "credential"})
_SUMMARY_KEYS: Final = frozenset(
    {
        "pool_status",
        "pid",
        "worker_count",
        "ready_worker_count",
        "driver",
        "control_transport",
        "endpoint_hash",
    }
)
_BASE_KEYS: Final = frozenset({"version", "type"})


class ControlRequest(Frozen):
    """One request; the credential is kept out of ``repr`` so it cannot reach a log."""

    __slots__ = ("_command", "_credential")
    __match_args__ = ("command", "credential")
    _fields = ("command", "credential")
    _shown = ("command",)
    _command: ControlCommand
    _credential: str

    def __init__(self, command: ControlCommand, credential: str) -> None:
        self._set(command, credential)

    @property
    def command(self) -> ControlCommand:
        return self._command

    @property
    def credential(self) -> str:
        return self._credential


class PoolSummary(Frozen):
    """The safe live facts about a pool that ``status`` and ``health`` both carry."""

    __slots__ = (
        "_control_transport",
        "_driver",
        "_endpoint_hash",
        "_pid",
        "_pool_status",
        "_ready_worker_count",
        "_worker_count",
    )
    __match_args__ = _fields = _shown = (
        "pool_status",
        "pid",
        "worker_count",
        "ready_worker_count",
        "driver",
        "control_transport",
        "endpoint_hash",
    )
    _pool_status: PoolStatus
    _pid: int
    _worker_count: int
    _ready_worker_count: int
    _driver: Driver
    _control_transport: Transport
    _endpoint_hash: str

    def __init__(
        self,
        pool_status: PoolStatus,
        pid: int,
        worker_count: int,
        ready_worker_count: int,
        driver: Driver,
        control_transport: Transport,
        endpoint_hash: str,
    ) -> None:
        self._set(
            pool_status,
            pid,
            worker_count,
            ready_worker_count,
            driver,
            control_transport,
            endpoint_hash,
        )

    @property
    def pool_status(self) -> PoolStatus:
        return self._pool_status

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def worker_count(self) -> int:
        return self._worker_count

    @property
    def ready_worker_count(self) -> int:
        return self._ready_worker_count

    @property
    def driver(self) -> Driver:
        return self._driver

    @property
    def control_transport(self) -> Transport:
        return self._control_transport

    @property
    def endpoint_hash(self) -> str:
        return self._endpoint_hash


class StatusResponse(Frozen):
    """The answer to ``status``."""

    __slots__ = ("_summary",)
    __match_args__ = _fields = _shown = ("summary",)
    _summary: PoolSummary

    def __init__(self, summary: PoolSummary) -> None:
        self._set(summary)

    @property
    def summary(self) -> PoolSummary:
        return self._summary


class HealthResponse(Frozen):
    """The answer to ``health``: healthy only when running with every slot ready."""

    __slots__ = ("_healthy", "_reason", "_summary")
    __match_args__ = _fields = _shown = ("summary", "healthy", "reason")
    _summary: PoolSummary
    _healthy: bool
    _reason: HealthReason

    def __init__(self, summary: PoolSummary, healthy: bool, reason: HealthReason) -> None:
        self._set(summary, healthy, reason)

    @property
    def summary(self) -> PoolSummary:
        return self._summary

    @property
    def healthy(self) -> bool:
        return self._healthy

    @property
    def reason(self) -> HealthReason:
        return self._reason


class StopProgress(Frozen):
    """Sent when shutdown enters a phase; ``budget_ms`` is that phase's deadline."""

    __slots__ = ("_budget_ms", "_phase")
    __match_args__ = _fields = _shown = ("phase", "budget_ms")
    _phase: ShutdownPhase
    _budget_ms: int

    def __init__(self, phase: ShutdownPhase, budget_ms: int) -> None:
        self._set(phase, budget_ms)

    @property
    def phase(self) -> ShutdownPhase:
        return self._phase

    @property
    def budget_ms(self) -> int:
        return self._budget_ms


class StoppedResponse(Frozen):
    """The terminal answer to ``stop``: the generation is gone and the lock is free."""

    __slots__ = ()
    __match_args__ = ()


class ErrorResponse(Frozen):
    """A failure, as its catalogue reason (the code travels too and must agree)."""

    __slots__ = ("_reason",)
    __match_args__ = _fields = _shown = ("reason",)
    _reason: Reason

    def __init__(self, reason: Reason) -> None:
        self._set(reason)

    @property
    def reason(self) -> Reason:
        return self._reason

    @property
    def code(self) -> ErrorCode:
        """The code the reason belongs to."""
        return REASON_CODES[self.reason]


ControlResponse = StatusResponse | HealthResponse | StopProgress | StoppedResponse | ErrorResponse


def _read_request(obj: s.JsonObject) -> ControlRequest:
    s.check_version(obj, CONTROL_VERSION)
    s.check_keys(obj, _REQUEST_KEYS)
    return ControlRequest(
        command=s.get_enum(obj, "command", ControlCommand),
        credential=s.get_hex(obj, "credential", CREDENTIAL_HEX_LEN),
    )


def encode_request(request: ControlRequest) -> bytes:
    """Encode a request line; a malformed credential is a :class:`LocalProtocolError`."""
    obj: s.JsonObject = {
        "version": CONTROL_VERSION,
        "command": request.command.value,
        "credential": request.credential,
    }
    return s.encode_checked(obj, _read_request)


def decode_request(line: bytes) -> ControlRequest:
    """Decode a request line; anything off is a :class:`RemoteProtocolError`."""
    return s.decode_checked(line, _read_request, MAX_FRAME_BYTES)


def _summary_obj(summary: PoolSummary) -> s.JsonObject:
    return {
        "pool_status": summary.pool_status.value,
        "pid": summary.pid,
        "worker_count": summary.worker_count,
        "ready_worker_count": summary.ready_worker_count,
        "driver": summary.driver.value,
        "control_transport": summary.control_transport.value,
        "endpoint_hash": summary.endpoint_hash,
    }


def _read_summary(obj: s.JsonObject) -> PoolSummary:
    workers = s.get_int(obj, "worker_count", 1, MAX_WORKERS)
    return PoolSummary(
        pool_status=s.get_enum(obj, "pool_status", PoolStatus),
        pid=s.get_int(obj, "pid", 1, MAX_PID),
        worker_count=workers,
        ready_worker_count=s.get_int(obj, "ready_worker_count", 0, workers),
        driver=s.get_enum(obj, "driver", Driver),
        control_transport=s.get_enum(obj, "control_transport", Transport),
        endpoint_hash=s.get_hex(obj, "endpoint_hash", ENDPOINT_HASH_HEX_LEN),
    )


def _response_obj(response: ControlResponse) -> s.JsonObject:
    obj: s.JsonObject = {"version": CONTROL_VERSION}
    if isinstance(response, StatusResponse):
        obj.update(_summary_obj(response.summary), type="status")
    elif isinstance(response, HealthResponse):
        obj.update(
            _summary_obj(response.summary),
            type="health",
            healthy=response.healthy,
            reason=response.reason.value,
        )
    elif isinstance(response, StopProgress):
        obj.update(type="stop-progress", phase=response.phase.value, budget_ms=response.budget_ms)
    elif isinstance(response, StoppedResponse):
        obj.update(type="stopped")
    else:
        obj.update(type="error", code=response.code.value, reason=response.reason.value)
    return obj


def _read_response(obj: s.JsonObject) -> ControlResponse:
    s.check_version(obj, CONTROL_VERSION)
    kind = s.get_type(obj)
    if kind == "status":
        s.check_keys(obj, _BASE_KEYS | _SUMMARY_KEYS)
        return StatusResponse(_read_summary(obj))
    if kind == "health":
        s.check_keys(obj, _BASE_KEYS | _SUMMARY_KEYS | {"healthy", "reason"})
        healthy = s.get_bool(obj, "healthy")
        why = s.get_enum(obj, "reason", HealthReason)
        if healthy is not (why is HealthReason.HEALTHY):  # the two must tell one story
            raise s.FieldError(Reason.FRAME_INVALID_VALUE, "$.reason")
        return HealthResponse(_read_summary(obj), healthy=healthy, reason=why)
    if kind == "stop-progress":
        s.check_keys(obj, _BASE_KEYS | {"phase", "budget_ms"})
        return StopProgress(
            phase=s.get_enum(obj, "phase", ShutdownPhase),
            budget_ms=s.get_int(obj, "budget_ms", 0, MAX_TIMEOUT_MS),
        )
    if kind == "stopped":
        s.check_keys(obj, _BASE_KEYS)
        return StoppedResponse()
    if kind == "error":
        s.check_keys(obj, _BASE_KEYS | {"code", "reason"})
        code = s.get_enum(obj, "code", ErrorCode)
        reason = s.get_enum(obj, "reason", Reason)
        if REASON_CODES[reason] is not code:
            raise s.FieldError(Reason.FRAME_INVALID_VALUE, "$.reason")
        return ErrorResponse(reason)
    raise s.FieldError(Reason.FRAME_UNKNOWN_TYPE, "$.type")


def encode_response(response: ControlResponse) -> bytes:
    """Encode an answer line, checked by the same rules the client applies."""
    return s.encode_checked(_response_obj(response), _read_response)


def decode_response(line: bytes) -> ControlResponse:
    """Decode an answer line; anything off is a :class:`RemoteProtocolError`."""
    return s.decode_checked(line, _read_response, MAX_FRAME_BYTES)
