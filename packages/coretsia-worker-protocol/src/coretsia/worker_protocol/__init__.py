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

import sys

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

_WHERE: dict[str, str] = {
    "ControlCommand": "coretsia.worker_protocol.vocabulary",
    "Driver": "coretsia.worker_protocol.vocabulary",
    "DriverRequest": "coretsia.worker_protocol.vocabulary",
    "PoolStatus": "coretsia.worker_protocol.vocabulary",
    "ShutdownPhase": "coretsia.worker_protocol.vocabulary",
    "Transport": "coretsia.worker_protocol.vocabulary",
    "TransportRequest": "coretsia.worker_protocol.vocabulary",
    "CONTROL_VERSION": "coretsia.worker_protocol.control",
    "ConfigRule": "coretsia.worker_protocol.catalogue",
    "ControlRequest": "coretsia.worker_protocol.control",
    "ControlResponse": "coretsia.worker_protocol.control",
    "EXIT_CODES": "coretsia.worker_protocol.catalogue",
    "EXPLANATIONS": "coretsia.worker_protocol.catalogue",
    "ErrorCode": "coretsia.worker_protocol.catalogue",
    "ErrorResponse": "coretsia.worker_protocol.control",
    "ExitCode": "coretsia.worker_protocol.exit_codes",
    "HealthReason": "coretsia.worker_protocol.catalogue",
    "HealthResponse": "coretsia.worker_protocol.control",
    "LineFramer": "coretsia.worker_protocol.framing",
    "LocalProtocolError": "coretsia.worker_protocol.exceptions",
    "Locator": "coretsia.worker_protocol.locator",
    "MAX_FRAME_BYTES": "coretsia.worker_protocol.framing",
    "Need": "coretsia.worker_protocol.framing",
    "PoolState": "coretsia.worker_protocol.state",
    "PoolSummary": "coretsia.worker_protocol.control",
    "ProtocolError": "coretsia.worker_protocol.exceptions",
    "REASON_CODES": "coretsia.worker_protocol.catalogue",
    "Reason": "coretsia.worker_protocol.catalogue",
    "RemoteProtocolError": "coretsia.worker_protocol.exceptions",
    "StatusResponse": "coretsia.worker_protocol.control",
    "StopProgress": "coretsia.worker_protocol.control",
    "StoppedResponse": "coretsia.worker_protocol.control",
    "WorkerAlreadyRunningError": "coretsia.worker_protocol.exceptions",
    "WorkerCommunicationFailedError": "coretsia.worker_protocol.exceptions",
    "WorkerConfigError": "coretsia.worker_protocol.exceptions",
    "WorkerError": "coretsia.worker_protocol.exceptions",
    "WorkerForkFailedError": "coretsia.worker_protocol.exceptions",
    "WorkerLifecycleFailedError": "coretsia.worker_protocol.exceptions",
    "WorkerNotRunningError": "coretsia.worker_protocol.exceptions",
    "WorkerStartFailedError": "coretsia.worker_protocol.exceptions",
    "__version__": "coretsia.worker_protocol._version",
    "decode_locator": "coretsia.worker_protocol.locator",
    "decode_request": "coretsia.worker_protocol.control",
    "decode_response": "coretsia.worker_protocol.control",
    "decode_state": "coretsia.worker_protocol.state",
    "encode_locator": "coretsia.worker_protocol.locator",
    "encode_request": "coretsia.worker_protocol.control",
    "encode_response": "coretsia.worker_protocol.control",
    "encode_state": "coretsia.worker_protocol.state",
    "endpoint_hash": "coretsia.worker_protocol.endpoint",
}


def __getattr__(name: str) -> object:
    """Import the defining submodule on first use of a public name."""
    module = _WHERE.get(name)
    if module is None:
        msg = f"module 'coretsia.worker_protocol' has no attribute {name!r}"
        raise AttributeError(msg)
    __import__(module)  # not importlib.import_module: importing importlib costs too
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
