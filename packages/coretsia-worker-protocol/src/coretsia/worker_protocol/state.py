"""The diagnostic state file v1: ``var/tmp/worker.state.json``.

Diagnostic only: it is never liveness authority (a free lock means "not running" whatever
this file says). Exactly seed 000's ten fields, deterministic JSON, written with a temp
file and rename, deleted after a clean stop. It never holds timestamps, paths, ports,
child pids, tokens or messages: the schema has no room for them.
"""

from __future__ import annotations

from typing import Final

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame
from coretsia.worker_protocol.records import field
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


class PoolState(Frame):
    """The redacted snapshot of an active pool (``pid`` is the supervisor's)."""

    pid: int = field(kind=s.Int(1, MAX_PID))
    status: PoolStatus = field(kind=s.Choice(PoolStatus))
    worker_count: int = field(kind=s.Int(1, MAX_WORKERS))
    ready_worker_count: int = field(kind=s.Int(0, MAX_WORKERS))
    driver_requested: DriverRequest = field(kind=s.Choice(DriverRequest))
    driver: Driver = field(kind=s.Choice(Driver))
    control_transport_requested: TransportRequest = field(kind=s.Choice(TransportRequest))
    control_transport: Transport = field(kind=s.Choice(Transport))
    endpoint_hash: str = field(kind=s.Hex(ENDPOINT_HASH_HEX_LEN))

    def _check(self) -> None:
        s.require(self.ready_worker_count <= self.worker_count, "ready_worker_count")


_STATE: Final = Codec(STATE_VERSION, (PoolState,), tagged=False, max_bytes=MAX_STATE_BYTES)


def encode_state(state: PoolState) -> bytes:
    """Encode the state file's bytes (one line of deterministic JSON)."""
    return _STATE.encode(state)


def decode_state(data: bytes) -> PoolState:
    """Decode the state file's bytes; anything off is a :class:`RemoteProtocolError`."""
    state: PoolState = _STATE.decode(data)
    return state
