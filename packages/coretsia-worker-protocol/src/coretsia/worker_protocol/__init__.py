"""Coretsia Worker's protocol: what third parties install to talk to a running supervisor.

The public, stable part is re-exported here: control protocol v2, the locator and state
schemas, framing, the error catalogue and exceptions, exit codes, the endpoint hash and
the task-source SPI. Everything here is sans-IO (bytes in, typed values out; values in,
bytes out) and imports neither trio, psutil nor cattrs. Names are loaded lazily (PEP 562):
importing a submodule, as every worker's boot path does, does not import the rest.

I/O lives in two clearly named modules that are not imported here:
:mod:`coretsia.worker_protocol.client` (the blocking :class:`ControlClient`) and
:mod:`coretsia.worker_protocol.lock` (the lifecycle lock). The frames between Coretsia's
own processes live in :mod:`coretsia.worker_protocol.internal` and
:mod:`coretsia.worker_protocol.worker_channel`, with no stability promise.
"""

from __future__ import annotations

from coretsia.worker_protocol._lazy import lazy_dir, lazy_getattr

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules

if TYPE_CHECKING:
    from coretsia.worker_protocol._version import __version__ as __version__
    from coretsia.worker_protocol.catalogue import EXIT_CODES as EXIT_CODES
    from coretsia.worker_protocol.catalogue import EXPLANATIONS as EXPLANATIONS
    from coretsia.worker_protocol.catalogue import REASON_CODES as REASON_CODES
    from coretsia.worker_protocol.catalogue import ConfigRule as ConfigRule
    from coretsia.worker_protocol.catalogue import ErrorCode as ErrorCode
    from coretsia.worker_protocol.catalogue import HealthReason as HealthReason
    from coretsia.worker_protocol.catalogue import Reason as Reason
    from coretsia.worker_protocol.control import CONTROL_VERSION as CONTROL_VERSION
    from coretsia.worker_protocol.control import Challenge as Challenge
    from coretsia.worker_protocol.control import ControlRequest as ControlRequest
    from coretsia.worker_protocol.control import ControlResponse as ControlResponse
    from coretsia.worker_protocol.control import ErrorResponse as ErrorResponse
    from coretsia.worker_protocol.control import HealthResponse as HealthResponse
    from coretsia.worker_protocol.control import Hello as Hello
    from coretsia.worker_protocol.control import PoolSummary as PoolSummary
    from coretsia.worker_protocol.control import StatusResponse as StatusResponse
    from coretsia.worker_protocol.control import StoppedResponse as StoppedResponse
    from coretsia.worker_protocol.control import StopProgress as StopProgress
    from coretsia.worker_protocol.control import decode_request as decode_request
    from coretsia.worker_protocol.control import decode_response as decode_response
    from coretsia.worker_protocol.control import encode_request as encode_request
    from coretsia.worker_protocol.control import encode_response as encode_response
    from coretsia.worker_protocol.control import open_request as open_request
    from coretsia.worker_protocol.control import open_response as open_response
    from coretsia.worker_protocol.endpoint import endpoint_hash as endpoint_hash
    from coretsia.worker_protocol.exceptions import LocalProtocolError as LocalProtocolError
    from coretsia.worker_protocol.exceptions import ProtocolError as ProtocolError
    from coretsia.worker_protocol.exceptions import RemoteProtocolError as RemoteProtocolError
    from coretsia.worker_protocol.exceptions import (
        RuntimeEntrypointError as RuntimeEntrypointError,
    )
    from coretsia.worker_protocol.exceptions import (
        WorkerAlreadyRunningError as WorkerAlreadyRunningError,
    )
    from coretsia.worker_protocol.exceptions import (
        WorkerCommunicationFailedError as WorkerCommunicationFailedError,
    )
    from coretsia.worker_protocol.exceptions import WorkerConfigError as WorkerConfigError
    from coretsia.worker_protocol.exceptions import WorkerError as WorkerError
    from coretsia.worker_protocol.exceptions import WorkerForkFailedError as WorkerForkFailedError
    from coretsia.worker_protocol.exceptions import (
        WorkerLifecycleFailedError as WorkerLifecycleFailedError,
    )
    from coretsia.worker_protocol.exceptions import WorkerNotRunningError as WorkerNotRunningError
    from coretsia.worker_protocol.exceptions import WorkerStartFailedError as WorkerStartFailedError
    from coretsia.worker_protocol.exit_codes import ExitCode as ExitCode
    from coretsia.worker_protocol.framing import MAX_FRAME_BYTES as MAX_FRAME_BYTES
    from coretsia.worker_protocol.framing import LineFramer as LineFramer
    from coretsia.worker_protocol.framing import Need as Need
    from coretsia.worker_protocol.locator import Locator as Locator
    from coretsia.worker_protocol.locator import decode_locator as decode_locator
    from coretsia.worker_protocol.locator import encode_locator as encode_locator
    from coretsia.worker_protocol.runtime_entrypoints import (
        RUNTIME_ENTRYPOINT_GROUP as RUNTIME_ENTRYPOINT_GROUP,
    )
    from coretsia.worker_protocol.runtime_entrypoints import (
        TASK_TYPE_ENTRYPOINTS as TASK_TYPE_ENTRYPOINTS,
    )
    from coretsia.worker_protocol.state import PoolState as PoolState
    from coretsia.worker_protocol.state import decode_state as decode_state
    from coretsia.worker_protocol.state import encode_state as encode_state
    from coretsia.worker_protocol.vocabulary import ControlCommand as ControlCommand
    from coretsia.worker_protocol.vocabulary import Driver as Driver
    from coretsia.worker_protocol.vocabulary import DriverRequest as DriverRequest
    from coretsia.worker_protocol.vocabulary import PoolStatus as PoolStatus
    from coretsia.worker_protocol.vocabulary import ShutdownPhase as ShutdownPhase
    from coretsia.worker_protocol.vocabulary import Transport as Transport
    from coretsia.worker_protocol.vocabulary import TransportRequest as TransportRequest

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
        "Challenge",
        "ControlRequest",
        "ControlResponse",
        "ErrorResponse",
        "HealthResponse",
        "Hello",
        "PoolSummary",
        "StatusResponse",
        "StopProgress",
        "StoppedResponse",
        "decode_request",
        "decode_response",
        "encode_request",
        "encode_response",
        "open_request",
        "open_response",
    ),
    "endpoint": ("endpoint_hash",),
    "exceptions": (
        "LocalProtocolError",
        "ProtocolError",
        "RemoteProtocolError",
        "RuntimeEntrypointError",
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
    "runtime_entrypoints": ("RUNTIME_ENTRYPOINT_GROUP", "TASK_TYPE_ENTRYPOINTS"),
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

__all__ = sorted(name for names in _HOMES.values() for name in names)


def __getattr__(name: str) -> object:
    return lazy_getattr(__name__, name, _HOMES)


def __dir__() -> list[str]:
    return lazy_dir(__name__, _HOMES)
