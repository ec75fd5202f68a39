"""Coretsia Worker's protocol: what third parties install to talk to a running supervisor.

The public, stable part is re-exported here: control protocol v1, the locator and state
schemas, framing, the error catalogue and exceptions, exit codes, the endpoint hash and
the task-source SPI. Everything here is sans-IO (bytes in, typed values out; values in,
bytes out) and imports neither trio, psutil nor cattrs. Names are loaded lazily (PEP 562):
importing a submodule, as every worker's boot path does, does not pay for the rest.

I/O lives in two clearly named modules that are not imported here:
:mod:`coretsia.worker_protocol.client` (the blocking :class:`ControlClient`) and
:mod:`coretsia.worker_protocol.lock` (the lifecycle lock). The frames between Coretsia's
own processes live in :mod:`coretsia.worker_protocol.internal` and
:mod:`coretsia.worker_protocol.worker_channel`, with no stability promise.
"""

from __future__ import annotations

# Not ``from typing import TYPE_CHECKING``: importing typing costs milliseconds on every
# worker boot, and type checkers honour a module-level ``TYPE_CHECKING`` all the same.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from coretsia.worker_protocol._version import __version__
    from coretsia.worker_protocol.catalogue import (
        EXIT_CODES,
        EXPLANATIONS,
        REASON_CODES,
        ConfigRule,
        ErrorCode,
        HealthReason,
        Reason,
    )
    from coretsia.worker_protocol.control import (
        CONTROL_VERSION,
        ControlRequest,
        ControlResponse,
        ErrorResponse,
        HealthResponse,
        PoolSummary,
        StatusResponse,
        StoppedResponse,
        StopProgress,
        decode_request,
        decode_response,
        encode_request,
        encode_response,
    )
    from coretsia.worker_protocol.endpoint import endpoint_hash
    from coretsia.worker_protocol.exceptions import (
        LocalProtocolError,
        ProtocolError,
        RemoteProtocolError,
        WorkerAlreadyRunningError,
        WorkerCommunicationFailedError,
        WorkerConfigError,
        WorkerError,
        WorkerForkFailedError,
        WorkerLifecycleFailedError,
        WorkerNotRunningError,
        WorkerStartFailedError,
    )
    from coretsia.worker_protocol.exit_codes import ExitCode
    from coretsia.worker_protocol.framing import MAX_FRAME_BYTES, LineFramer, Need
    from coretsia.worker_protocol.locator import Locator, decode_locator, encode_locator
    from coretsia.worker_protocol.state import PoolState, decode_state, encode_state
    from coretsia.worker_protocol.vocabulary import (
        ControlCommand,
        Driver,
        DriverRequest,
        PoolStatus,
        ShutdownPhase,
        Transport,
        TransportRequest,
    )


__all__ = [
    "CONTROL_VERSION",
    "EXIT_CODES",
    "EXPLANATIONS",
    "MAX_FRAME_BYTES",
    "REASON_CODES",
    "ConfigRule",
    "ControlCommand",
    "ControlRequest",
    "ControlResponse",
    "Driver",
    "DriverRequest",
    "ErrorCode",
    "ErrorResponse",
    "ExitCode",
    "HealthReason",
    "HealthResponse",
    "LineFramer",
    "LocalProtocolError",
    "Locator",
    "Need",
    "PoolState",
    "PoolStatus",
    "PoolSummary",
    "ProtocolError",
    "Reason",
    "RemoteProtocolError",
    "ShutdownPhase",
    "StatusResponse",
    "StopProgress",
    "StoppedResponse",
    "Transport",
    "TransportRequest",
    "WorkerAlreadyRunningError",
    "WorkerCommunicationFailedError",
    "WorkerConfigError",
    "WorkerError",
    "WorkerForkFailedError",
    "WorkerLifecycleFailedError",
    "WorkerNotRunningError",
    "WorkerStartFailedError",
    "__version__",
    "decode_locator",
    "decode_request",
    "decode_response",
    "decode_state",
    "encode_locator",
    "encode_request",
    "encode_response",
    "encode_state",
    "endpoint_hash",
]

_HOMES = {
    "_version": ("__version__",),
    "catalogue": (
        "ConfigRule",
        "EXIT_CODES",
        "EXPLANATIONS",
        "ErrorCode",
        "HealthReason",
        "REASON_CODES",
        "Reason",
    ),
    "control": (
        "CONTROL_VERSION",
        "ControlRequest",
        "ControlResponse",
        "ErrorResponse",
        "HealthResponse",
        "PoolSummary",
        "StatusResponse",
        "StopProgress",
        "StoppedResponse",
        "decode_request",
        "decode_response",
        "encode_request",
        "encode_response",
    ),
    "endpoint": ("endpoint_hash",),
    "exceptions": (
        "LocalProtocolError",
        "ProtocolError",
        "RemoteProtocolError",
        "WorkerAlreadyRunningError",
        "WorkerCommunicationFailedError",
        "WorkerConfigError",
        "WorkerError",
        "WorkerForkFailedError",
        "WorkerLifecycleFailedError",
        "WorkerNotRunningError",
        "WorkerStartFailedError",
    ),
    "exit_codes": ("ExitCode",),
    "framing": ("LineFramer", "MAX_FRAME_BYTES", "Need"),
    "locator": ("Locator", "decode_locator", "encode_locator"),
    "state": ("PoolState", "decode_state", "encode_state"),
    "vocabulary": (
        "ControlCommand",
        "Driver",
        "DriverRequest",
        "PoolStatus",
        "ShutdownPhase",
        "Transport",
        "TransportRequest",
    ),
}


def __getattr__(name: str) -> object:
    from coretsia.worker_protocol.internal.runtime.lazy import lazy_getattr

    return lazy_getattr(__name__, name, _HOMES)


def __dir__() -> list[str]:
    from coretsia.worker_protocol.internal.runtime.lazy import lazy_dir

    return lazy_dir(__name__, _HOMES)
