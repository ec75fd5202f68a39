"""Property tests of every codec: round trips from strategies, and fuzzing every decoder.

The fuzzing contract: whatever bytes arrive, a decoder either returns a frame or raises
RemoteProtocolError (never a KeyError, TypeError, UnicodeError, RecursionError...), and
a frame it accepts re-encodes to the same JSON object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import REASON_CODES, ErrorCode, HealthReason, Reason
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
from coretsia.worker_protocol.exceptions import RemoteProtocolError
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import proc_host as p
from coretsia.worker_protocol.locator import Locator, decode_locator, encode_locator
from coretsia.worker_protocol.paths import MAX_PATH_CHARS, is_safe_relative_path
from coretsia.worker_protocol.state import PoolState, decode_state, encode_state
from coretsia.worker_protocol.vocabulary import (
    MAX_PID,
    MAX_TIMEOUT_MS,
    MAX_WORKERS,
    Containment,
    ContainmentRequest,
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
    Retire,
    Retiring,
    ShutdownRequest,
    TaskFailed,
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
def summaries(draw: st.DrawFn, min_workers: int = 1) -> PoolSummary:
    """A PoolSummary whose ready count never exceeds its worker count."""
    workers = draw(st.integers(min_workers, MAX_WORKERS))
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
    st.builds(Failed, worker_reasons),
    st.just(Retiring()),
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
exited = st.builds(g.Exited, slot=ints, exit_kind=texts)
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

# -- arbitrary JSON ----------------------------------------------------------------------

#: Every key and type tag any schema uses, so fuzzed objects often look almost right.
KNOWN_KEYS = [
    "argv",
    "attempt",
    "budget_ms",
    "clean",
    "client_nonce",
    "code",
    "command",
    "containment",
    "control_transport",
    "control_transport_requested",
    "credential",
    "driver",
    "driver_requested",
    "endpoint_hash",
    "error_type",
    "exit_kind",
    "force_kill_timeout_ms",
    "healthy",
    "host",
    "mac",
    "path",
    "peer_version",
    "phase",
    "pid",
    "pool_status",
    "port",
    "ready_worker_count",
    "reason",
    "retried",
    "root_id",
    "server_nonce",
    "signal",
    "slot",
    "status",
    "stop_timeout_ms",
    "token",
    "transport",
    "type",
    "umask",
    "version",
    "worker_count",
]
KNOWN_TAGS = [
    "challenge",
    "request",
    "status",
    "health",
    "stop-progress",
    "stopped",
    "error",
    "ready",
    "failed",
    "retiring",
    "task-failed",
    "shutdown-request",
    "hello",
    "welcome",
    "locked",
    "refused",
    "spawn",
    "spawned",
    "spawn-failed",
    "exited",
    "shutdown",
    "phase",
    "drained",
    "release",
    "released",
    "host-hello",
    "signal",
    "quit",
]
#: Strings that are valid somewhere: enum values, hex of the right lengths, a safe path.
KNOWN_STRINGS = st.sampled_from(
    [m.value for e in (ControlCommand, PoolStatus, Driver, DriverRequest, Transport) for m in e]
    + [m.value for e in (Containment, ContainmentRequest) for m in e]
    + [m.value for e in (TransportRequest, ShutdownPhase, HealthReason, Reason) for m in e]
    + [m.value for m in ErrorCode]
    + ["0" * 64, "a" * 32, "var/tmp/worker.sock", "127.0.0.1", "term", "kill", *KNOWN_TAGS]
)

#: Any text, lone surrogates included (a ``\ud800`` escape decodes to one; UTF-8 cannot
#: encode it, so a decoder that accepts one cannot re-encode what it accepted).
#: (Built from a list: ``st.text`` quietly drops surrogates from a mixed alphabet.)
any_text = st.lists(st.characters() | st.sampled_from(["\ud800", "\udfff"]), max_size=20).map(
    "".join
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
    | KNOWN_STRINGS
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KNOWN_KEYS) | any_text, children, max_size=4)
    ),
    max_leaves=12,
)
keys = st.sampled_from(KNOWN_KEYS) | any_text


@st.composite
def json_objects(draw: st.DrawFn) -> dict[str, Any]:
    """An arbitrary JSON object, usually with a plausible version and type tag."""
    obj = draw(st.dictionaries(keys, json_values, max_size=12))
    if draw(st.integers(0, 3)):
        obj["version"] = draw(st.sampled_from([1, 1, 1, 2, 0, True, "1", 1.0]))
    if draw(st.booleans()):
        obj["type"] = draw(st.sampled_from(KNOWN_TAGS) | scalars)
    return obj


def dumps(obj: Any) -> bytes:
    """Plain JSON bytes, \\u-escaping what UTF-8 cannot hold (a lone surrogate)."""
    return json.dumps(obj).encode("ascii")


def check_decoder(codec: Codec, data: bytes) -> None:
    """The fuzzing contract: reject with RemoteProtocolError, or accept and re-encode."""
    try:
        frame = codec.decode(data)
    except RemoteProtocolError:
        return
    encoded = codec.encode(frame)
    assert codec.decode(encoded) == frame
    assert json.loads(encoded) == json.loads(data)


def check_every_decoder(data: bytes) -> None:
    """Apply the fuzzing contract to every decoder, naming the one that breaks it."""
    for name in NAMES:
        try:
            check_decoder(CODECS[name], data)
        except Exception as exc:
            msg = f"the {name} decoder broke the contract with {type(exc).__name__}"
            raise AssertionError(msg) from exc


# -- the tests ---------------------------------------------------------------------------


class TestRoundTripProperty:
    @pytest.mark.parametrize("name", NAMES)
    @FUZZ_EACH
    @given(data=st.data())
    def test_every_generated_frame_round_trips(self, name: str, data: st.DataObject) -> None:
        """Any valid frame decodes back to itself, from byte-identical re-encoding."""
        codec = CODECS[name]
        frame = data.draw(codec.frames)
        encoded = codec.encode(frame)
        assert codec.decode(encoded) == frame
        assert codec.encode(codec.decode(encoded)) == encoded


class TestFuzzDecoders:
    @FUZZ
    @given(raw=st.binary(max_size=300))
    def test_arbitrary_bytes(self, raw: bytes) -> None:
        """Arbitrary bytes are rejected by every decoder with RemoteProtocolError only."""
        check_every_decoder(raw)

    @FUZZ
    @given(obj=json_objects())
    def test_arbitrary_json_objects(self, obj: dict[str, Any]) -> None:
        """Arbitrary JSON objects are rejected with RemoteProtocolError or accepted exactly."""
        check_every_decoder(dumps(obj))

    @FUZZ
    @given(value=json_values)
    def test_arbitrary_json_values(self, value: Any) -> None:
        """Any JSON value at top level is rejected with RemoteProtocolError or accepted."""
        check_every_decoder(dumps(value))

    @pytest.mark.parametrize("name", NAMES)
    @FUZZ_EACH
    @given(data=st.data())
    def test_mutated_valid_frames(self, name: str, data: st.DataObject) -> None:
        """A valid frame with a key dropped, added, retyped or re-texted is still handled."""
        codec = CODECS[name]
        obj = json.loads(codec.encode(data.draw(codec.frames)))
        mutation = data.draw(st.sampled_from(["drop", "add", "retype", "replace", "retext"]))
        key = data.draw(st.sampled_from(sorted(obj)))
        if mutation == "retext":
            # Splice arbitrary text (lone surrogates included) into a string field.
            texts = [k for k, v in obj.items() if isinstance(v, str) and k != "type"]
            key = data.draw(st.sampled_from(texts or ["type"]))
            at = data.draw(st.integers(0, len(obj[key])))
            splice = data.draw(st.sampled_from(["\ud800", "\udfff", "\x00", "\n", "é"]) | any_text)
            obj[key] = obj[key][:at] + splice + obj[key][at:]
        elif mutation == "drop":
            del obj[key]
        elif mutation == "add":
            obj[data.draw(keys)] = data.draw(json_values)
        elif mutation == "retype":
            original = obj[key]
            obj[key] = data.draw(json_values.filter(lambda v: type(v) is not type(original)))
        else:
            obj[key] = data.draw(json_values)
        check_decoder(codec, dumps(obj))

    @pytest.mark.parametrize("name", NAMES)
    @FUZZ_EACH
    @given(data=st.data())
    def test_corrupted_valid_bytes(self, name: str, data: st.DataObject) -> None:
        """A valid frame with one byte changed, cut short or padded is still handled."""
        codec = CODECS[name]
        raw = bytearray(codec.encode(data.draw(codec.frames)))
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del raw[at:]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=4))
        check_decoder(codec, bytes(raw))


class TestPathStrategy:
    @FUZZ_EACH
    @given(path=safe_paths)
    def test_generated_paths_are_safe(self, path: str) -> None:
        """The strategy of safe paths only yields paths the protocol accepts."""
        assert is_safe_relative_path(path)
