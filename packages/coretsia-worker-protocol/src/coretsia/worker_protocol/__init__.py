"""Coretsia Worker's protocol: what third parties install to talk to a running supervisor.

The public, stable part is re-exported here: control protocol v1, the locator and state
schemas, framing, the error catalogue and exceptions, exit codes, the endpoint hash and
the task-source SPI. Everything here is sans-IO (bytes in, typed values out; values in,
bytes out) and imports neither trio, psutil nor cattrs.

I/O lives in two clearly named modules that are not imported here:
:mod:`coretsia.worker_protocol.client` (the blocking :class:`ControlClient`) and
:mod:`coretsia.worker_protocol.lock` (the lifecycle lock). The frames between Coretsia's
own processes live in :mod:`coretsia.worker_protocol.internal` and
:mod:`coretsia.worker_protocol.worker_channel`, with no stability promise.
"""

from __future__ import annotations

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
