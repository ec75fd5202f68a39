"""One valid sample of every public frame, with its codec: the codec tests mutate a sample to
show one way a peer gets a frame wrong.

The credential, token and nonces are well-formed hex; ``SECRET`` is the text a test plants
where it must never be echoed back.
"""

from __future__ import annotations

from typing import Any

from frame_checks import Codec

from coretsia.worker_protocol.catalogue import HealthReason, Reason, SourceFault
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ErrorResponse,
    HealthResponse,
    Hello,
    PoolSummary,
    StatusResponse,
    StoppedResponse,
    StopProgress,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
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
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Heartbeat,
    Ready,
    RecycleCause,
    Retiring,
    ShutdownRequest,
    SourceAvailable,
    SourceUnavailable,
    TaskFailed,
    TaskLeaseLost,
    decode_worker_frame,
    encode_worker_frame,
)

CRED = "0123456789abcdef" * 4
TOKEN = "fedcba9876543210" * 4
NONCE = "00112233445566778899aabbccddeeff" * 2
EHASH = "0123456789abcdef" * 2
SECRET = "sk_live_TOPSECRET_0451"

SUMMARY = PoolSummary(
    pool_status=PoolStatus.RUNNING,
    pid=4242,
    worker_count=4,
    ready_worker_count=3,
    driver=Driver.FORK,
    control_transport=Transport.UNIX,
    endpoint_hash=EHASH,
)
UNIX_LOCATOR = Locator(
    transport=Transport.UNIX,
    credential=CRED,
    stop_timeout_ms=10000,
    force_kill_timeout_ms=1000,
    path="var/tmp/worker.sock",
)
TCP_LOCATOR = Locator(
    transport=Transport.TCP,
    credential=CRED,
    stop_timeout_ms=10000,
    force_kill_timeout_ms=1000,
    host="127.0.0.1",
    port=9327,
)
STATE = PoolState(
    pid=4242,
    status=PoolStatus.RUNNING,
    worker_count=4,
    ready_worker_count=4,
    driver_requested=DriverRequest.AUTO,
    driver=Driver.FORK,
    control_transport_requested=TransportRequest.AUTO,
    control_transport=Transport.UNIX,
    endpoint_hash=EHASH,
)

REQUEST: Codec = (encode_request, decode_request)
RESPONSE: Codec = (encode_response, decode_response)
LOCATOR: Codec = (encode_locator, decode_locator)
STATE_CODEC: Codec = (encode_state, decode_state)
WORKER: Codec = (encode_worker_frame, decode_worker_frame)

FRAMES: list[tuple[Codec, Any]] = [
    (REQUEST, Hello(NONCE)),
    *((REQUEST, ControlRequest(c)) for c in ControlCommand),
    (RESPONSE, Challenge(NONCE)),
    (RESPONSE, StatusResponse(SUMMARY)),
    *(
        (RESPONSE, HealthResponse(SUMMARY, healthy=False, reason=r))
        for r in HealthReason
        if r is not HealthReason.HEALTHY
    ),
    (RESPONSE, HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY)),
    *((RESPONSE, StopProgress(p, 5000)) for p in ShutdownPhase),
    (RESPONSE, StoppedResponse()),
    (RESPONSE, ErrorResponse(Reason.NOT_RUNNING)),
    (RESPONSE, ErrorResponse(Reason.FRAME_OVERSIZED)),
    (LOCATOR, UNIX_LOCATOR),
    (LOCATOR, TCP_LOCATOR),
    (STATE_CODEC, STATE),
    (WORKER, Ready()),
    (WORKER, Ready(TOKEN)),
    (WORKER, Failed(Reason.READINESS_TIMEOUT)),
    (WORKER, Failed(Reason.CHILD_EXITED)),
    (WORKER, Retiring()),
    (WORKER, Retiring(RecycleCause.MAX_MEMORY)),
    (WORKER, ShutdownRequest()),
    (WORKER, Heartbeat()),
    (WORKER, TaskFailed("ValueError")),
    (WORKER, TaskFailed("app.jobs.Outer.Declined", attempt=3, retried=False)),
    *((WORKER, SourceUnavailable(f)) for f in SourceFault),
    (WORKER, SourceAvailable()),
    (WORKER, TaskLeaseLost()),
]
FRAME_IDS = [f"{type(f).__name__}-{i}" for i, (_, f) in enumerate(FRAMES)]
