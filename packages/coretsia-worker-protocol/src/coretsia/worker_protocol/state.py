"""The diagnostic state file v1: ``var/tmp/worker.state.json``.

Diagnostic only: it is never liveness authority (a free lock means "not running" whatever
this file says). Exactly seed 000's ten fields, deterministic JSON, written with a temp
file and rename, deleted after a clean stop. It never holds timestamps, paths, ports,
child pids, tokens or messages: the schema has no room for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol.vocabulary import (
    ENDPOINT_HASH_HEX_LEN,
    MAX_PID,
    MAX_WORKERS,
    Driver,
    DriverRequest,
    PoolStatus,
    Transport,
    TransportRequest,
)

STATE_VERSION: Final = 1
"""The version of the state schema."""

MAX_STATE_BYTES: Final = 4096
"""A state file larger than this is rejected before it is parsed."""

_KEYS: Final = frozenset(
    {
        "version",
        "pid",
        "status",
        "worker_count",
        "ready_worker_count",
        "driver_requested",
        "driver",
        "control_transport_requested",
        "control_transport",
        "endpoint_hash",
    }
)


@dataclass(frozen=True, slots=True)
class PoolState:
    """The redacted snapshot of an active pool (``pid`` is the supervisor's)."""

    pid: int
    status: PoolStatus
    worker_count: int
    ready_worker_count: int
    driver_requested: DriverRequest
    driver: Driver
    control_transport_requested: TransportRequest
    control_transport: Transport
    endpoint_hash: str


def _read(obj: s.JsonObject) -> PoolState:
    s.check_version(obj, STATE_VERSION)
    s.check_keys(obj, _KEYS)
    workers = s.get_int(obj, "worker_count", 1, MAX_WORKERS)
    return PoolState(
        pid=s.get_int(obj, "pid", 1, MAX_PID),
        status=s.get_enum(obj, "status", PoolStatus),
        worker_count=workers,
        ready_worker_count=s.get_int(obj, "ready_worker_count", 0, workers),
        driver_requested=s.get_enum(obj, "driver_requested", DriverRequest),
        driver=s.get_enum(obj, "driver", Driver),
        control_transport_requested=s.get_enum(
            obj, "control_transport_requested", TransportRequest
        ),
        control_transport=s.get_enum(obj, "control_transport", Transport),
        endpoint_hash=s.get_hex(obj, "endpoint_hash", ENDPOINT_HASH_HEX_LEN),
    )


def encode_state(state: PoolState) -> bytes:
    """Encode the state file's bytes (one line of deterministic JSON)."""
    obj: s.JsonObject = {
        "version": STATE_VERSION,
        "pid": state.pid,
        "status": state.status.value,
        "worker_count": state.worker_count,
        "ready_worker_count": state.ready_worker_count,
        "driver_requested": state.driver_requested.value,
        "driver": state.driver.value,
        "control_transport_requested": state.control_transport_requested.value,
        "control_transport": state.control_transport.value,
        "endpoint_hash": state.endpoint_hash,
    }
    return s.encode_checked(obj, _read)


def decode_state(data: bytes) -> PoolState:
    """Decode the state file's bytes; anything off is a :class:`RemoteProtocolError`."""
    return s.decode_checked(data, _read, MAX_STATE_BYTES)
