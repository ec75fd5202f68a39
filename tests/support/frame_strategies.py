"""Hypothesis strategies of valid frames for every codec (public and internal), and the
codecs they feed, for the round-trip properties and the decoder fuzzing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from hypothesis import settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import (
    REASON_CODES,
    ErrorCode,
    HealthReason,
    Reason,
    SourceFault,
)
from coretsia.worker_protocol.control import (
    MAX_COUNT,
    MAX_RSS_KIB,
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
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import proc_host as p
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.locator import Locator, decode_locator, encode_locator
from coretsia.worker_protocol.paths import MAX_PATH_CHARS
from coretsia.worker_protocol.state import PoolState, decode_state, encode_state
from coretsia.worker_protocol.vocabulary import (
    MAX_PID,
    MAX_TIMEOUT_MS,
    MAX_WORKERS,
    Containment,
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
    Retire,
    Retiring,
    ShutdownRequest,
    SourceAvailable,
    SourceUnavailable,
    TaskFailed,
    TaskLeaseLost,
    decode_supervisor_frame,
    decode_worker_frame,
    encode_retire,
    encode_worker_frame,
)

FUZZ = settings(max_examples=200, deadline=None)
#: The per-codec properties run eight times over, so each run is shorter.
FUZZ_EACH = settings(max_examples=100, deadline=None)

# -- valid frames ------------------------------------------------------------------------

hex64 = st.text("0123456789abcdef", min_size=64, max_size=64)
hex32 = st.text("0123456789abcdef", min_size=32, max_size=32)
pids = st.integers(1, MAX_PID)
timeouts = st.integers(1, MAX_TIMEOUT_MS)
segment = st.text(
    st.characters(categories=("L", "N")) | st.sampled_from("._-"), min_size=1, max_size=12
).filter(lambda s: s not in (".", ".."))
safe_paths = (
    st.lists(segment, min_size=1, max_size=6)
    .map("/".join)
    .filter(lambda s: len(s) <= MAX_PATH_CHARS)
)

requests = st.one_of(
    st.builds(ControlRequest, command=st.sampled_from(ControlCommand)),
    st.builds(Hello, client_nonce=hex64),
)


@st.composite
def summaries(draw: st.DrawFn, min_workers: int = 1, max_workers: int = MAX_WORKERS) -> PoolSummary:
    """A PoolSummary whose ready count never exceeds its worker count."""
    workers = draw(st.integers(min_workers, max_workers))
    return PoolSummary(
        pool_status=draw(st.sampled_from(PoolStatus)),
        pid=draw(pids),
        worker_count=workers,
        ready_worker_count=draw(st.integers(0, workers)),
        driver=draw(st.sampled_from(Driver)),
        control_transport=draw(st.sampled_from(Transport)),
        endpoint_hash=draw(hex32),
        containment=draw(st.none() | st.sampled_from(Containment)),
    )


responses = st.one_of(
    st.builds(Challenge, server_nonce=hex64),
    st.builds(StatusResponse, summaries()),
    st.builds(
        lambda summary, sizes, counts: StatusResponse(
            summary, sizes[: summary.worker_count], *counts
        ),
        summaries(max_workers=64),
        st.lists(st.none() | st.integers(0, MAX_RSS_KIB), min_size=64, max_size=64).map(tuple),
        st.tuples(st.integers(0, MAX_COUNT), st.integers(0, MAX_COUNT)),
    ),
    st.builds(
        lambda summary, reason: HealthResponse(
            summary, healthy=reason is HealthReason.HEALTHY, reason=reason
        ),
        summaries(),
        st.sampled_from(HealthReason),
    ),
    st.builds(
        StopProgress, phase=st.sampled_from(ShutdownPhase), budget_ms=st.integers(0, MAX_TIMEOUT_MS)
    ),
    st.just(StoppedResponse()),
    st.builds(ErrorResponse, st.sampled_from(Reason)),
)
locators = st.one_of(
    st.builds(
        Locator,
        transport=st.just(Transport.UNIX),
        credential=hex64,
        stop_timeout_ms=timeouts,
        force_kill_timeout_ms=timeouts,
        path=safe_paths,
    ),
    st.builds(
        Locator,
        transport=st.just(Transport.TCP),
        credential=hex64,
        stop_timeout_ms=timeouts,
        force_kill_timeout_ms=timeouts,
        host=st.text(min_size=1, max_size=64),
        port=st.integers(1, 65535),
    ),
)


@st.composite
def states(draw: st.DrawFn) -> PoolState:
    """A PoolState with at least one worker and no more ready than workers."""
    summary = draw(summaries(min_workers=1))
    return PoolState(
        pid=summary.pid,
        status=summary.pool_status,
        worker_count=summary.worker_count,
        ready_worker_count=summary.ready_worker_count,
        driver_requested=draw(st.sampled_from(DriverRequest)),
        driver=summary.driver,
        control_transport_requested=draw(st.sampled_from(TransportRequest)),
        control_transport=summary.control_transport,
        endpoint_hash=summary.endpoint_hash,
    )


worker_reasons = st.sampled_from(
    [r for r in Reason if REASON_CODES[r] in (ErrorCode.START_FAILED, ErrorCode.LIFECYCLE_FAILED)]
)
worker_frames = st.one_of(
    st.builds(Ready, st.none() | hex64),
    st.builds(Failed, worker_reasons, st.none() | st.sampled_from(SourceFault)),
    st.builds(SourceUnavailable, st.sampled_from(SourceFault)),
    st.just(SourceAvailable()),
    st.just(TaskLeaseLost()),
    st.builds(Retiring, st.sampled_from(RecycleCause)),
    st.just(ShutdownRequest()),
    st.just(Heartbeat()),
    st.builds(
        TaskFailed,
        st.from_regex(
            r"[A-Za-z_][A-Za-z0-9_]{0,20}(\.[A-Za-z_][A-Za-z0-9_]{0,20}){0,3}", fullmatch=True
        ),
        st.none() | st.integers(1, 2**31 - 1),
        st.none() | st.booleans(),
    ),
)

texts = st.text(max_size=40)
ints = st.integers(-(2**63), 2**63)
spawn = st.builds(g.Spawn, slot=ints, argv=st.lists(texts, max_size=8).map(tuple))
spawned = st.builds(g.Spawned, slot=ints, pid=ints)
spawn_failed = st.builds(g.SpawnFailed, slot=ints, reason=st.sampled_from(Reason))
exited = st.builds(g.Exited, slot=ints, exit_kind=st.sampled_from(ExitKind))
welcome = st.builds(g.Welcome, peer_version=texts, pid=ints)
refused = st.builds(g.Refused, reason=st.sampled_from(Reason))
guardian_frames = st.one_of(
    st.builds(
        g.Hello,
        peer_version=texts,
        driver=st.sampled_from(Driver),
        stop_timeout_ms=ints,
        force_kill_timeout_ms=ints,
        umask=ints,
        log_json=st.booleans(),
        containment=st.sampled_from(Containment),
        root_id=st.text("0123456789abcdef", min_size=16, max_size=16),
    ),
    welcome,
    st.just(g.Locked()),
    refused,
    st.builds(g.GenerationFailed, reason=st.sampled_from(Reason)),
    st.builds(g.HostStarted, pid=ints),
    spawn,
    spawned,
    spawn_failed,
    exited,
    st.just(g.Shutdown()),
    st.builds(g.Phase, phase=st.sampled_from(ShutdownPhase), budget_ms=ints),
    st.builds(g.Drained, clean=st.booleans()),
    st.just(g.Release()),
    st.just(g.Released()),
)
proc_host_frames = st.one_of(
    st.builds(p.HostHello, peer_version=texts),
    welcome,
    refused,
    spawn,
    spawned,
    spawn_failed,
    exited,
    st.builds(p.Signal, slot=ints, signal=st.sampled_from(p.SignalName)),
    st.just(p.Quit()),
)


class Codec(NamedTuple):
    """A codec's encoder and decoder, with the strategy of the valid frames it carries."""

    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    frames: st.SearchStrategy[Any]


CODECS: dict[str, Codec] = {
    "request": Codec(encode_request, decode_request, requests),
    "response": Codec(encode_response, decode_response, responses),
    "locator": Codec(encode_locator, decode_locator, locators),
    "state": Codec(encode_state, decode_state, states()),
    "worker": Codec(encode_worker_frame, decode_worker_frame, worker_frames),
    # The one frame a supervisor sends a worker; it has no fields, so one value covers it.
    "supervisor": Codec(lambda _frame: encode_retire(), decode_supervisor_frame, st.just(Retire())),
    "guardian": Codec(g.encode_guardian_frame, g.decode_guardian_frame, guardian_frames),
    "proc-host": Codec(p.encode_proc_host_frame, p.decode_proc_host_frame, proc_host_frames),
}
NAMES = sorted(CODECS)
