"""The hand-written strict codec of the public frames: control, locator, state, worker channel.

Every frame type round-trips exactly, encodes to deterministic bytes, and every way a peer
can get a frame wrong is one RemoteProtocolError with the right reason token and no echo
of the offending key or value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from frame_checks import Codec, echoes, obj_of, reject

from coretsia.worker_protocol.catalogue import (
    REASON_CODES,
    ErrorCode,
    HealthReason,
    Reason,
)
from coretsia.worker_protocol.control import (
    CONTROL_VERSION,
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
    open_response,
)
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
)
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
from coretsia.worker_protocol.locator import (
    MAX_LOCATOR_BYTES,
    Locator,
    decode_locator,
    encode_locator,
)
from coretsia.worker_protocol.state import MAX_STATE_BYTES, PoolState, decode_state, encode_state
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
    Retiring,
    ShutdownRequest,
    TaskFailed,
    decode_worker_frame,
    encode_worker_frame,
    error_type_name,
)

CRED = "0123456789abcdef" * 4
TOKEN = "fedcba9876543210" * 4
NONCE = "00112233445566778899aabbccddeeff" * 2
MAC = "ffeeddccbbaa99887766554433221100" * 2
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
WORKER_REASONS = [
    r for r in Reason if REASON_CODES[r] in (ErrorCode.START_FAILED, ErrorCode.LIFECYCLE_FAILED)
]

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
    (WORKER, ShutdownRequest()),
    (WORKER, Heartbeat()),
    (WORKER, TaskFailed("ValueError")),
    (WORKER, TaskFailed("app.jobs.Outer.Declined", attempt=3, retried=False)),
]
FRAME_IDS = [f"{type(f).__name__}-{i}" for i, (_, f) in enumerate(FRAMES)]


class TestRoundTrip:
    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_frame_round_trips_exactly(self, codec: Codec, frame: Any) -> None:
        """Decoding what was encoded gives back an equal frame."""
        encode, decode = codec
        assert decode(encode(frame)) == frame

    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_decoder_accepts_a_frame_without_its_newline(self, codec: Codec, frame: Any) -> None:
        """The framer strips the newline, so decoders accept the bare line too."""
        encode, decode = codec
        assert decode(encode(frame).rstrip(b"\n")) == frame

    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_re_encoding_is_byte_identical(self, codec: Codec, frame: Any) -> None:
        """Encode, decode and encode again yields the very same bytes."""
        encode, decode = codec
        data = encode(frame)
        assert encode(decode(data)) == data

    @pytest.mark.parametrize("reason", list(Reason), ids=[r.value for r in Reason])
    def test_error_response_round_trips_for_every_reason(self, reason: Reason) -> None:
        """An error answer carrying any catalogue reason round-trips."""
        frame = ErrorResponse(reason)
        assert decode_response(encode_response(frame)) == frame

    @pytest.mark.parametrize("reason", WORKER_REASONS, ids=[r.value for r in WORKER_REASONS])
    def test_failed_round_trips_for_every_worker_reason(self, reason: Reason) -> None:
        """A worker's failed frame carrying any start or lifecycle reason round-trips."""
        frame = Failed(reason)
        assert decode_worker_frame(encode_worker_frame(frame)) == frame


class TestDeterministicBytes:
    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_keys_are_sorted(self, codec: Codec, frame: Any) -> None:
        """Object keys appear in sorted order."""
        keys = json.loads(codec[0](frame), object_pairs_hook=lambda pairs: [k for k, _ in pairs])
        assert keys == sorted(keys)

    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_one_line_no_whitespace(self, codec: Codec, frame: Any) -> None:
        """The frame is one line ending in a single newline, with no spaces."""
        data = codec[0](frame)
        assert data.endswith(b"\n")
        assert data.count(b"\n") == 1
        assert b" " not in data
        assert b"\t" not in data
        assert b"\r" not in data

    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_bytes_equal_canonical_json(self, codec: Codec, frame: Any) -> None:
        """The bytes are exactly canonical JSON (sorted, compact, UTF-8) plus a newline."""
        data = codec[0](frame)
        canonical = json.dumps(
            json.loads(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        assert data == canonical.encode("utf-8") + b"\n"

    def test_request_golden_bytes(self) -> None:
        """A sealed status request encodes to these exact bytes; the seal was given the
        same bytes without the mac."""
        bodies: list[bytes] = []

        def seal(body: bytes) -> str:
            bodies.append(body)
            return MAC

        data = encode_request(ControlRequest(ControlCommand.STATUS), seal)
        assert bodies == [b'{"command":"status","type":"request","version":2}']
        assert data == (
            b'{"command":"status","mac":"' + MAC.encode() + b'","type":"request","version":2}\n'
        )

    def test_stopped_golden_bytes(self) -> None:
        """The terminal stopped answer encodes to these exact bytes."""
        assert encode_response(StoppedResponse()) == b'{"type":"stopped","version":2}\n'

    def test_open_splits_off_the_mac(self) -> None:
        """open_response gives the frame, the body the sender sealed, and the mac."""
        data = encode_response(StoppedResponse(), lambda _body: MAC)
        assert open_response(data) == (StoppedResponse(), b'{"type":"stopped","version":2}', MAC)
        assert open_response(encode_response(StoppedResponse()))[2] is None

    @pytest.mark.parametrize("mac", ["", MAC.upper(), MAC[:-1], 7])
    def test_a_malformed_mac(self, mac: object) -> None:
        """A mac of the wrong shape is refused at $.mac, decoding and encoding."""
        obj = obj_of(RESPONSE, StoppedResponse())
        obj["mac"] = mac
        assert reject(decode_response, obj).path == "$.mac"
        if isinstance(mac, str):
            with pytest.raises(LocalProtocolError):
                encode_response(StoppedResponse(), lambda _body: mac)

    def test_no_mac_outside_the_control_channel(self) -> None:
        """Other codecs are not sealable: a mac is an unknown key there."""
        obj = obj_of(WORKER, Ready())
        obj["mac"] = MAC
        assert reject(decode_worker_frame, obj).reason is Reason.FRAME_UNKNOWN_KEY

    def test_non_ascii_is_written_as_utf8(self) -> None:
        """Non-ASCII text is raw UTF-8, not a \\u escape."""
        locator = Locator(
            transport=Transport.TCP,
            credential=CRED,
            stop_timeout_ms=1,
            force_kill_timeout_ms=1,
            host="hôte",
            port=1,
        )
        data = encode_locator(locator)
        assert "hôte".encode() in data
        assert b"\\u" not in data


class TestUnknownKey:
    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_extra_key_is_rejected(self, codec: Codec, frame: Any) -> None:
        """A key the schema does not define is worker-frame-unknown-key."""
        obj = obj_of(codec, frame)
        obj[SECRET] = 1
        error = reject(codec[1], obj)
        assert error.reason is Reason.FRAME_UNKNOWN_KEY

    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_unknown_key_is_never_echoed(self, codec: Codec, frame: Any) -> None:
        """The unknown key's text appears nowhere in the error."""
        obj = obj_of(codec, frame)
        obj[SECRET] = SECRET
        error = reject(codec[1], obj)
        assert not echoes(error, SECRET)
        assert error.path == "$"


class TestMissingKey:
    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_each_missing_key_is_named(self, codec: Codec, frame: Any) -> None:
        """Dropping any one required key is worker-frame-missing-key with its path."""
        for key in obj_of(codec, frame):
            if key == "version":
                continue
            obj = obj_of(codec, frame)
            del obj[key]
            error = reject(codec[1], obj)
            assert (error.reason, error.path) == (Reason.FRAME_MISSING_KEY, f"$.{key}")

    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_missing_version(self, codec: Codec, frame: Any) -> None:
        """A frame without a version is worker-frame-missing-key at $.version."""
        obj = obj_of(codec, frame)
        del obj["version"]
        error = reject(codec[1], obj)
        assert error.reason is Reason.FRAME_MISSING_KEY
        assert error.path == "$.version"


# (codec, frame, key, bad value): the cattrs coercion traps and their cousins.
WRONG_TYPES: list[tuple[Codec, Any, str, Any]] = [
    (RESPONSE, StatusResponse(SUMMARY), "pid", "5"),
    (RESPONSE, StatusResponse(SUMMARY), "pid", True),
    (RESPONSE, StatusResponse(SUMMARY), "pid", 5.9),
    (RESPONSE, StatusResponse(SUMMARY), "pid", 5.0),
    (RESPONSE, StatusResponse(SUMMARY), "pid", None),
    (RESPONSE, StatusResponse(SUMMARY), "worker_count", "4"),
    (RESPONSE, StatusResponse(SUMMARY), "worker_count", False),
    (RESPONSE, StatusResponse(SUMMARY), "ready_worker_count", 3.5),
    (RESPONSE, StatusResponse(SUMMARY), "endpoint_hash", 1),
    (RESPONSE, StatusResponse(SUMMARY), "pool_status", 1),
    (RESPONSE, StatusResponse(SUMMARY), "driver", ["fork"]),
    (
        RESPONSE,
        HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY),
        "healthy",
        "false",
    ),
    (RESPONSE, HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY), "healthy", 1),
    (RESPONSE, HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY), "healthy", None),
    (RESPONSE, HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY), "reason", 1),
    (RESPONSE, StopProgress(ShutdownPhase.KILL, 5), "budget_ms", "5"),
    (RESPONSE, StopProgress(ShutdownPhase.KILL, 5), "budget_ms", True),
    (RESPONSE, StopProgress(ShutdownPhase.KILL, 5), "phase", 1),
    (RESPONSE, ErrorResponse(Reason.NOT_RUNNING), "code", 3),
    (RESPONSE, ErrorResponse(Reason.NOT_RUNNING), "reason", 1),
    (REQUEST, Hello(NONCE), "client_nonce", 1),
    (RESPONSE, Challenge(NONCE), "server_nonce", None),
    (REQUEST, ControlRequest(ControlCommand.STATUS), "command", 1),
    (REQUEST, ControlRequest(ControlCommand.STATUS), "command", None),
    (LOCATOR, UNIX_LOCATOR, "path", 1),
    (LOCATOR, UNIX_LOCATOR, "stop_timeout_ms", "10000"),
    (LOCATOR, UNIX_LOCATOR, "force_kill_timeout_ms", 1000.0),
    (LOCATOR, UNIX_LOCATOR, "transport", 1),
    (LOCATOR, TCP_LOCATOR, "host", 1),
    (LOCATOR, TCP_LOCATOR, "port", "9327"),
    (LOCATOR, TCP_LOCATOR, "port", True),
    (STATE_CODEC, STATE, "pid", "4242"),
    (STATE_CODEC, STATE, "pid", True),
    (STATE_CODEC, STATE, "worker_count", 4.9),
    (STATE_CODEC, STATE, "status", 1),
    (STATE_CODEC, STATE, "driver_requested", None),
    (WORKER, Ready(TOKEN), "token", 1),
    (WORKER, Ready(TOKEN), "token", False),
    (WORKER, Failed(Reason.CHILD_EXITED), "reason", 1),
    (WORKER, TaskFailed("ValueError", 2, retried=True), "error_type", 1),
    (WORKER, TaskFailed("ValueError", 2, retried=True), "attempt", "3"),
    (WORKER, TaskFailed("ValueError", 2, retried=True), "attempt", True),
    (WORKER, TaskFailed("ValueError", 2, retried=True), "attempt", 1.0),
    (WORKER, TaskFailed("ValueError", 2, retried=True), "retried", "yes"),
    (WORKER, TaskFailed("ValueError", 2, retried=True), "retried", 1),
]


class TestWrongType:
    @pytest.mark.parametrize(("codec", "frame", "key", "bad"), WRONG_TYPES)
    def test_wrong_json_type_is_rejected(
        self, codec: Codec, frame: Any, key: str, bad: Any
    ) -> None:
        """A field holding the wrong JSON type is worker-frame-wrong-type at its path."""
        obj = obj_of(codec, frame)
        obj[key] = bad
        error = reject(codec[1], obj)
        assert error.reason is Reason.FRAME_WRONG_TYPE
        assert error.path == f"$.{key}"

    @pytest.mark.parametrize("version", ["1", True, 1.0, None])
    def test_version_must_be_the_integer(self, version: Any) -> None:
        """``"1"``, ``true`` (although ``True == 1``), ``1.0`` and null are not version 1."""
        for codec, frame in FRAMES:
            obj = obj_of(codec, frame)
            obj["version"] = version
            assert reject(codec[1], obj).reason is Reason.FRAME_WRONG_TYPE, frame

    def test_wrong_type_does_not_echo_the_value(self) -> None:
        """A secret-looking value in a wrongly typed field is not echoed."""
        obj = obj_of(STATE_CODEC, STATE)
        obj["pid"] = SECRET
        assert not echoes(reject(decode_state, obj), SECRET)


class TestVersion:
    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_other_version_is_unsupported(self, codec: Codec, frame: Any) -> None:
        """The next version is worker-frame-unsupported-version."""
        obj = obj_of(codec, frame)
        obj["version"] += 1
        error = reject(codec[1], obj)
        assert error.reason is Reason.FRAME_UNSUPPORTED_VERSION
        assert error.path == "$.version"

    @pytest.mark.parametrize(("codec", "frame"), FRAMES, ids=FRAME_IDS)
    def test_version_is_checked_before_keys(self, codec: Codec, frame: Any) -> None:
        """A newer frame with new keys says "unsupported version", not "unknown key"."""
        obj = obj_of(codec, frame)
        obj["version"] += 1
        obj["added_in_next"] = True
        obj.pop("type", None)
        assert reject(codec[1], obj).reason is Reason.FRAME_UNSUPPORTED_VERSION

    def test_version_zero_is_unsupported(self) -> None:
        """Version 0 is also unsupported, for every frame."""
        for codec, frame in FRAMES:
            obj = obj_of(codec, frame)
            obj["version"] = 0
            assert reject(codec[1], obj).reason is Reason.FRAME_UNSUPPORTED_VERSION


TAGGED: list[tuple[Callable[[bytes], Any], int]] = [
    (decode_response, CONTROL_VERSION),
    (decode_request, CONTROL_VERSION),
    (decode_worker_frame, 1),
]
"""The tagged decoders, each with the version it speaks."""
TAGGED_IDS = ["response", "request", "worker"]


class TestTypeTag:
    @pytest.mark.parametrize(("decoder", "version"), TAGGED, ids=TAGGED_IDS)
    def test_unknown_type_tag(self, decoder: Callable[[bytes], Any], version: int) -> None:
        """An unknown ``type`` is worker-frame-unknown-type."""
        error = reject(decoder, {"version": version, "type": "start"})
        assert error.reason is Reason.FRAME_UNKNOWN_TYPE
        assert error.path == "$.type"

    @pytest.mark.parametrize(("decoder", "version"), TAGGED, ids=TAGGED_IDS)
    def test_unknown_type_tag_is_not_echoed(
        self, decoder: Callable[[bytes], Any], version: int
    ) -> None:
        """The unknown tag's text appears nowhere in the error."""
        assert not echoes(reject(decoder, {"version": version, "type": SECRET}), SECRET)

    @pytest.mark.parametrize(("decoder", "version"), TAGGED, ids=TAGGED_IDS)
    def test_non_string_type_tag(self, decoder: Callable[[bytes], Any], version: int) -> None:
        """A ``type`` that is not a string is worker-frame-wrong-type."""
        error = reject(decoder, {"version": version, "type": 7})
        assert error.reason is Reason.FRAME_WRONG_TYPE

    @pytest.mark.parametrize(("decoder", "version"), TAGGED, ids=TAGGED_IDS)
    def test_missing_type_tag(self, decoder: Callable[[bytes], Any], version: int) -> None:
        """A frame without ``type`` is worker-frame-missing-key at $.type."""
        error = reject(decoder, {"version": version})
        assert error.reason is Reason.FRAME_MISSING_KEY
        assert error.path == "$.type"

    def test_start_is_not_a_command(self) -> None:
        """The control vocabulary has no ``start``."""
        obj = obj_of(REQUEST, ControlRequest(ControlCommand.STOP))
        obj["command"] = "start"
        assert reject(decode_request, obj).reason is Reason.FRAME_INVALID_VALUE


DECODERS: list[tuple[str, Callable[[bytes], Any]]] = [
    ("request", decode_request),
    ("response", decode_response),
    ("locator", decode_locator),
    ("state", decode_state),
    ("worker", decode_worker_frame),
]
DECODER_IDS = [name for name, _ in DECODERS]
DECODER_FNS = [fn for _, fn in DECODERS]


class TestMalformedBytes:
    @pytest.mark.parametrize("decoder", DECODER_FNS, ids=DECODER_IDS)
    def test_duplicate_keys(self, decoder: Callable[[bytes], Any]) -> None:
        """A repeated key is worker-frame-duplicate-key, even with equal values."""
        error = reject(decoder, b'{"version":1,"version":1}')
        assert error.reason is Reason.FRAME_DUPLICATE_KEY

    @pytest.mark.parametrize("decoder", DECODER_FNS, ids=DECODER_IDS)
    def test_duplicate_nested_keys(self, decoder: Callable[[bytes], Any]) -> None:
        """A key repeated in a nested object is rejected as duplicate too."""
        error = reject(decoder, b'{"version":1,"x":{"a":1,"a":2}}')
        assert error.reason is Reason.FRAME_DUPLICATE_KEY

    @pytest.mark.parametrize("decoder", DECODER_FNS, ids=DECODER_IDS)
    def test_not_utf8(self, decoder: Callable[[bytes], Any]) -> None:
        """Bytes that are not UTF-8 are worker-frame-not-utf8."""
        error = reject(decoder, b'{"version":1,"x":"\xff\xfe"}')
        assert error.reason is Reason.FRAME_NOT_UTF8

    @pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
    def test_non_finite_constants(self, constant: bytes) -> None:
        """NaN and Infinity are not JSON: worker-frame-not-json, for every decoder."""
        for decoder in DECODER_FNS:
            error = reject(decoder, b'{"version":' + constant + b"}")
            assert error.reason is Reason.FRAME_NOT_JSON

    @pytest.mark.parametrize("data", [b"", b"{", b"{'version':1}", b"version=1", b"{}}"])
    def test_not_json(self, data: bytes) -> None:
        """Text that is not JSON is worker-frame-not-json, for every decoder."""
        for decoder in DECODER_FNS:
            assert reject(decoder, data).reason is Reason.FRAME_NOT_JSON

    @pytest.mark.parametrize("data", [b"[]", b"1", b'"x"', b"null", b"true", b'[{"version":1}]'])
    def test_not_an_object(self, data: bytes) -> None:
        """Valid JSON that is not an object is worker-frame-not-object, for every decoder."""
        for decoder in DECODER_FNS:
            assert reject(decoder, data).reason is Reason.FRAME_NOT_OBJECT

    def test_deep_nesting_is_not_a_crash(self) -> None:
        """Pathologically nested JSON is rejected, not a RecursionError."""
        data = b'{"version":1,"x":' + b"[" * 5000 + b"]" * 5000 + b"}"
        assert reject(decode_request, data).reason in (
            Reason.FRAME_NOT_JSON,
            Reason.FRAME_UNKNOWN_KEY,
        )


LIMITS: list[tuple[str, Callable[[bytes], Any], int]] = [
    ("request", decode_request, MAX_FRAME_BYTES),
    ("response", decode_response, MAX_FRAME_BYTES),
    ("worker", decode_worker_frame, MAX_FRAME_BYTES),
    ("locator", decode_locator, MAX_LOCATOR_BYTES),
    ("state", decode_state, MAX_STATE_BYTES),
]


class TestOversize:
    @pytest.mark.parametrize(("name", "decoder", "limit"), LIMITS, ids=[n for n, _, _ in LIMITS])
    def test_oversized_frame_is_rejected(
        self, name: str, decoder: Callable[[bytes], Any], limit: int
    ) -> None:
        """A frame one byte over its limit is worker-frame-oversized."""
        data = b'{"version":1,"pad":"' + b"x" * limit + b'"}'
        assert reject(decoder, data).reason is Reason.FRAME_OVERSIZED

    @pytest.mark.parametrize(("name", "decoder", "limit"), LIMITS, ids=[n for n, _, _ in LIMITS])
    def test_size_is_checked_before_decoding(
        self, name: str, decoder: Callable[[bytes], Any], limit: int
    ) -> None:
        """Oversized garbage is reported as oversized, not as bad UTF-8."""
        assert reject(decoder, b"\xff" * (limit + 1)).reason is Reason.FRAME_OVERSIZED

    @pytest.mark.parametrize(("name", "decoder", "limit"), LIMITS, ids=[n for n, _, _ in LIMITS])
    def test_limit_excludes_the_newline(
        self, name: str, decoder: Callable[[bytes], Any], limit: int
    ) -> None:
        """A frame of exactly the limit plus its newline is not oversized."""
        head = b'{"version":1,"pad":"'
        data = head + b"x" * (limit - len(head) - 2) + b'"}'
        assert len(data) == limit
        assert reject(decoder, data + b"\n").reason is not Reason.FRAME_OVERSIZED


class TestInvalidValues:
    def test_error_code_must_match_reason(self) -> None:
        """An error whose code is not its reason's code is worker-frame-invalid-value."""
        obj = obj_of(RESPONSE, ErrorResponse(Reason.NOT_RUNNING))
        obj["code"] = ErrorCode.START_FAILED.value
        error = reject(decode_response, obj)
        assert error.reason is Reason.FRAME_INVALID_VALUE
        assert error.path == "$.reason"

    def test_error_with_unknown_reason(self) -> None:
        """A reason token outside the catalogue is rejected."""
        obj = obj_of(RESPONSE, ErrorResponse(Reason.NOT_RUNNING))
        obj["reason"] = "worker-made-up"
        assert reject(decode_response, obj).reason is Reason.FRAME_INVALID_VALUE

    @pytest.mark.parametrize(
        ("healthy", "reason"),
        [(True, HealthReason.SLOTS_NOT_READY), (False, HealthReason.HEALTHY)],
    )
    def test_health_flag_must_agree_with_reason(self, healthy: bool, reason: HealthReason) -> None:
        """healthy and reason must tell one story, or the answer is rejected."""
        obj = obj_of(RESPONSE, HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY))
        obj.update(healthy=healthy, reason=reason.value)
        error = reject(decode_response, obj)
        assert error.reason is Reason.FRAME_INVALID_VALUE

    def test_error_response_code_property(self) -> None:
        """ErrorResponse.code is derived from its reason."""
        assert ErrorResponse(Reason.NOT_RUNNING).code is ErrorCode.NOT_RUNNING

    @pytest.mark.parametrize(
        ("codec", "frame"),
        [(RESPONSE, StatusResponse(SUMMARY)), (STATE_CODEC, STATE)],
        ids=["status", "state"],
    )
    def test_ready_count_above_worker_count(self, codec: Codec, frame: Any) -> None:
        """More ready workers than workers is worker-frame-invalid-value."""
        obj = obj_of(codec, frame)
        obj["ready_worker_count"] = obj["worker_count"] + 1
        error = reject(codec[1], obj)
        assert error.reason is Reason.FRAME_INVALID_VALUE
        assert error.path == "$.ready_worker_count"

    @pytest.mark.parametrize(
        "nonce",
        [NONCE.upper(), NONCE[:-1], NONCE + "0", "g" * 64, "", " " + NONCE[1:], SECRET],
    )
    def test_nonce_must_be_64_lowercase_hex(self, nonce: str) -> None:
        """A nonce that is not 64 lowercase hex characters is invalid."""
        obj = obj_of(REQUEST, Hello(NONCE))
        obj["client_nonce"] = nonce
        error = reject(decode_request, obj)
        assert error.reason is Reason.FRAME_INVALID_VALUE
        assert error.path == "$.client_nonce"

    def test_bad_nonce_is_not_echoed(self) -> None:
        """A wrong nonce's text appears nowhere in the error."""
        obj = obj_of(REQUEST, Hello(NONCE))
        obj["client_nonce"] = SECRET
        assert not echoes(reject(decode_request, obj), SECRET)

    def test_locator_credential_must_be_hex(self) -> None:
        """The locator's credential follows the same rule."""
        obj = obj_of(LOCATOR, UNIX_LOCATOR)
        obj["credential"] = CRED.upper()
        assert reject(decode_locator, obj).reason is Reason.FRAME_INVALID_VALUE

    @pytest.mark.parametrize(
        "path", ["/abs/worker.sock", "../worker.sock", "a/../b", "a b", "php://x", "", "a" * 201]
    )
    def test_unsafe_locator_path(self, path: str) -> None:
        """A locator path that is not a safe relative path is invalid."""
        obj = obj_of(LOCATOR, UNIX_LOCATOR)
        obj["path"] = path
        error = reject(decode_locator, obj)
        assert error.reason is Reason.FRAME_INVALID_VALUE
        assert error.path == "$.path"

    def test_unsafe_locator_path_is_not_echoed(self) -> None:
        """The rejected socket path appears nowhere in the error."""
        obj = obj_of(LOCATOR, UNIX_LOCATOR)
        obj["path"] = "/home/alice/TOPSECRET.sock"
        assert not echoes(reject(decode_locator, obj), "TOPSECRET")

    def test_lone_surrogate_in_locator_path(self) -> None:
        """A \\ud800 escape that UTF-8 cannot encode is an invalid value."""
        raw = encode_locator(UNIX_LOCATOR).replace(b"var/tmp", b"var/\\ud800")
        assert reject(decode_locator, raw).reason is Reason.FRAME_INVALID_VALUE

    def test_unix_locator_rejects_tcp_keys(self) -> None:
        """A unix locator may not carry host and port."""
        obj = obj_of(LOCATOR, UNIX_LOCATOR)
        obj.update(host="127.0.0.1", port=1)
        assert reject(decode_locator, obj).reason is Reason.FRAME_UNKNOWN_KEY

    def test_locator_missing_transport(self) -> None:
        """A locator without transport is worker-frame-missing-key at $.transport."""
        obj = obj_of(LOCATOR, TCP_LOCATOR)
        del obj["transport"]
        error = reject(decode_locator, obj)
        assert error.reason is Reason.FRAME_MISSING_KEY
        assert error.path == "$.transport"

    @pytest.mark.parametrize(("key", "value"), [("port", 0), ("port", 65536), ("host", "")])
    def test_tcp_locator_bounds(self, key: str, value: Any) -> None:
        """Port outside 1..65535 and an empty host are invalid."""
        obj = obj_of(LOCATOR, TCP_LOCATOR)
        obj[key] = value
        assert reject(decode_locator, obj).reason is Reason.FRAME_INVALID_VALUE

    @pytest.mark.parametrize("key", ["stop_timeout_ms", "force_kill_timeout_ms"])
    @pytest.mark.parametrize("value", [0, -1, 3_600_001])
    def test_locator_timeouts_bounded(self, key: str, value: int) -> None:
        """Stop budgets outside 1..3600000 ms are invalid."""
        obj = obj_of(LOCATOR, UNIX_LOCATOR)
        obj[key] = value
        assert reject(decode_locator, obj).reason is Reason.FRAME_INVALID_VALUE

    @pytest.mark.parametrize(("key", "value"), [("pid", 0), ("pid", 2**31), ("worker_count", 0)])
    def test_state_bounds(self, key: str, value: int) -> None:
        """A pid outside 1..2**31-1 or a pool of zero workers is an invalid state."""
        obj = obj_of(STATE_CODEC, STATE)
        obj[key] = value
        assert reject(decode_state, obj).reason is Reason.FRAME_INVALID_VALUE

    def test_stopped_is_not_a_persisted_status(self) -> None:
        """``stopped`` is only a control answer, never a state file status."""
        obj = obj_of(STATE_CODEC, STATE)
        obj["status"] = "stopped"
        assert reject(decode_state, obj).reason is Reason.FRAME_INVALID_VALUE

    def test_state_rejects_auto_as_resolved_driver(self) -> None:
        """The resolved driver is fork or proc, never auto."""
        obj = obj_of(STATE_CODEC, STATE)
        obj["driver"] = "auto"
        assert reject(decode_state, obj).reason is Reason.FRAME_INVALID_VALUE

    def test_worker_failed_reason_must_be_a_worker_reason(self) -> None:
        """A worker may only fail with a start or lifecycle reason."""
        obj = obj_of(WORKER, Failed(Reason.CHILD_EXITED))
        obj["reason"] = Reason.NOT_RUNNING.value
        assert reject(decode_worker_frame, obj).reason is Reason.FRAME_INVALID_VALUE

    def test_readiness_token_must_be_hex(self) -> None:
        """A readiness token that is not 64 lowercase hex is invalid."""
        obj = obj_of(WORKER, Ready(TOKEN))
        obj["token"] = SECRET
        error = reject(decode_worker_frame, obj)
        assert error.reason is Reason.FRAME_INVALID_VALUE
        assert not echoes(error, SECRET)

    def test_stop_progress_budget_bounded(self) -> None:
        """A negative stop-progress budget is invalid."""
        obj = obj_of(RESPONSE, StopProgress(ShutdownPhase.TERMINATE, 1))
        obj["budget_ms"] = -1
        assert reject(decode_response, obj).reason is Reason.FRAME_INVALID_VALUE


class TestErrorsCarryNothing:
    def test_decode_errors_chain_to_nothing(self) -> None:
        """A decode error has neither cause nor context that could carry peer text."""
        error = reject(decode_state, b'{"version":1,"x":"\xff"}')
        assert error.__cause__ is None
        assert error.__context__ is None

    def test_remote_error_is_a_protocol_error(self) -> None:
        """Decoders raise RemoteProtocolError, a ProtocolError and ValueError."""
        error = reject(decode_request, b"[]")
        assert isinstance(error, ProtocolError)
        assert isinstance(error, ValueError)


def _summary(**changes: Any) -> PoolSummary:
    """SUMMARY with some fields replaced (possibly by invalid values)."""
    fields: dict[str, Any] = {name: getattr(SUMMARY, name) for name in PoolSummary.__match_args__}
    return PoolSummary(**{**fields, **changes})


class TestEncodingInvalidFrames:
    @pytest.mark.parametrize("hello", [Hello(NONCE.upper()), Hello(""), Hello(SECRET)])
    def test_bad_hello_nonce(self, hello: Hello) -> None:
        """Encoding a hello with a malformed nonce is LocalProtocolError."""
        with pytest.raises(LocalProtocolError) as info:
            encode_request(hello)
        assert not echoes(info.value, SECRET)

    @pytest.mark.parametrize(
        "summary",
        [
            _summary(pid=0),
            _summary(pid=True),
            _summary(ready_worker_count=5),
            _summary(worker_count=1025, ready_worker_count=0),
            _summary(endpoint_hash="X" * 32),
        ],
    )
    def test_bad_summary(self, summary: PoolSummary) -> None:
        """Encoding a status with an invalid summary is LocalProtocolError."""
        with pytest.raises(LocalProtocolError):
            encode_response(StatusResponse(summary))

    def test_negative_stop_budget(self) -> None:
        """Encoding a stop-progress with a negative budget is LocalProtocolError."""
        with pytest.raises(LocalProtocolError):
            encode_response(StopProgress(ShutdownPhase.KILL, -1))

    @pytest.mark.parametrize(
        "locator",
        [
            Locator(Transport.UNIX, CRED, 1, 1, path=None),
            Locator(Transport.UNIX, CRED, 1, 1, path="/abs/worker.sock"),
            Locator(Transport.TCP, CRED, 1, 1, host="127.0.0.1", port=None),
            Locator(Transport.TCP, CRED, 1, 1, host=None, port=80),
            Locator(Transport.TCP, CRED, 0, 1, host="127.0.0.1", port=80),
            Locator(Transport.UNIX, "nothex", 1, 1, path="var/tmp/w.sock"),
        ],
    )
    def test_bad_locator(self, locator: Locator) -> None:
        """Encoding a locator that no reader would accept is LocalProtocolError."""
        with pytest.raises(LocalProtocolError):
            encode_locator(locator)

    def test_bad_state(self) -> None:
        """Encoding a state with more ready workers than workers is LocalProtocolError."""
        state = PoolState(
            pid=1,
            status=PoolStatus.STARTING,
            worker_count=1,
            ready_worker_count=2,
            driver_requested=DriverRequest.FORK,
            driver=Driver.FORK,
            control_transport_requested=TransportRequest.TCP,
            control_transport=Transport.TCP,
            endpoint_hash=EHASH,
        )
        with pytest.raises(LocalProtocolError):
            encode_state(state)

    @pytest.mark.parametrize(
        "frame",
        [
            Ready("short"),
            Failed(Reason.NOT_RUNNING),
            TaskFailed("no spaces: a message"),
            TaskFailed("f.<locals>.Error"),
            TaskFailed("x" * 129),
            TaskFailed("ValueError", attempt=0),
        ],
    )
    def test_bad_worker_frame(self, frame: Any) -> None:
        """Encoding a worker frame the supervisor would refuse is LocalProtocolError."""
        with pytest.raises(LocalProtocolError):
            encode_worker_frame(frame)


class TestTaskFailedLimits:
    @pytest.mark.parametrize(
        ("key", "good", "bad"),
        [
            ("error_type", "E" * 128, "E" * 129),
            ("error_type", "a.b_c.D1", "a..b"),
            ("attempt", 2**31 - 1, 2**31),
            ("attempt", 1, 0),
        ],
    )
    def test_a_value_just_past_each_limit_is_invalid(self, key: str, good: Any, bad: Any) -> None:
        """The decoder's limits, at the edge on both sides."""
        obj = obj_of(WORKER, TaskFailed("ValueError", 2, retried=True))
        obj[key] = good
        decode_worker_frame(json.dumps(obj).encode() + b"\n")
        obj[key] = bad
        assert reject(WORKER[1], obj).reason is Reason.FRAME_INVALID_VALUE


class TestErrorTypeName:
    def test_plain_and_nested_classes_keep_their_qualified_name(self) -> None:
        class Inner(Exception):
            pass

        assert error_type_name(ValueError) == "ValueError"
        assert error_type_name(TestErrorTypeName) == "TestErrorTypeName"
        assert error_type_name(Inner) == "Inner"  # qualname has <locals>: the bare name

    def test_a_name_that_is_not_code_is_never_sent(self) -> None:
        """A class built at run time may be named by data: only identifiers pass."""
        assert error_type_name(type("card 4111 declined", (Exception,), {})) == "Exception"
        assert error_type_name(type("x" * 200, (Exception,), {})) == "Exception"


class TestReprRedaction:
    def test_request_carries_no_credential(self) -> None:
        """A ControlRequest has nothing secret to hide: its command is all it holds."""
        assert ControlRequest.__match_args__ == ("command",)

    def test_locator_repr_hides_credential(self) -> None:
        """A Locator's repr never shows its credential."""
        assert CRED not in repr(UNIX_LOCATOR)

    def test_ready_repr_hides_token(self) -> None:
        """A Ready frame's repr never shows its token."""
        assert TOKEN not in repr(Ready(TOKEN))

    def test_stop_wait_covers_every_phase(self) -> None:
        """The locator's stop_wait_ms is the stop budget plus two force-kill budgets."""
        assert UNIX_LOCATOR.stop_wait_ms == 10000 + 2 * 1000
