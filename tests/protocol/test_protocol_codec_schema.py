"""A frame's shape as the public decoders read it: unknown, missing and wrongly typed keys, the
version and the type tag are each one RemoteProtocolError with its reason and path, and the
offending key or value is never echoed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from codec_samples import (
    FRAME_IDS,
    FRAMES,
    LOCATOR,
    NONCE,
    REQUEST,
    RESPONSE,
    SECRET,
    STATE,
    STATE_CODEC,
    SUMMARY,
    TCP_LOCATOR,
    TOKEN,
    UNIX_LOCATOR,
    WORKER,
)
from frame_checks import Codec, echoes, obj_of, reject

from coretsia.worker_protocol.catalogue import HealthReason, Reason, SourceFault
from coretsia.worker_protocol.control import (
    CONTROL_VERSION,
    Challenge,
    ControlRequest,
    ErrorResponse,
    HealthResponse,
    Hello,
    StatusResponse,
    StopProgress,
    decode_request,
    decode_response,
)
from coretsia.worker_protocol.state import decode_state
from coretsia.worker_protocol.vocabulary import ControlCommand, ShutdownPhase
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Ready,
    SourceUnavailable,
    TaskFailed,
    decode_worker_frame,
)


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
    (WORKER, Failed(Reason.TASK_SOURCE_NOT_READY, SourceFault.PERMISSION), "fault", 1),
    (WORKER, SourceUnavailable(SourceFault.UNREACHABLE), "fault", None),
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
