"""Well-typed values the public decoders still refuse: each field's rule (nonces, paths, bounds,
reasons, the worker's failure limits) at its edge, as worker-frame-invalid-value.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from codec_samples import (
    CRED,
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

from coretsia.worker_protocol.catalogue import ErrorCode, HealthReason, Reason
from coretsia.worker_protocol.control import (
    MAX_COUNT,
    MAX_RSS_KIB,
    ErrorResponse,
    HealthResponse,
    Hello,
    PoolSummary,
    StatusResponse,
    StopProgress,
    decode_request,
    decode_response,
    encode_response,
)
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
from coretsia.worker_protocol.locator import decode_locator, encode_locator
from coretsia.worker_protocol.state import decode_state
from coretsia.worker_protocol.vocabulary import MAX_WORKERS, ShutdownPhase
from coretsia.worker_protocol.worker_channel import Failed, Ready, TaskFailed, decode_worker_frame


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

    def test_status_lists_one_memory_per_slot(self) -> None:
        """A status whose slot_rss_kib is not one entry per slot is refused."""
        obj = obj_of(RESPONSE, StatusResponse(SUMMARY, (1, 2, 3, None), 0, 0))
        obj["slot_rss_kib"] = [1, 2, 3]
        error = reject(decode_response, obj)
        assert (error.reason, error.path) == (Reason.FRAME_INVALID_VALUE, "$.slot_rss_kib")

    @pytest.mark.parametrize(("key", "bad"), [("slot_rss_kib", [1, 2, 3, 2**32]),
                                              ("slot_rss_kib", [1, 2, 3, -1]),
                                              ("recycles_max_memory", -1),
                                              ("recycles_max_requests", 2**63)])  # fmt: skip
    def test_status_memory_and_counts_bounded(self, key: str, bad: object) -> None:
        """A resident size past 4 TiB (in KiB) or a negative one, or a count out of range."""
        obj = obj_of(RESPONSE, StatusResponse(SUMMARY, (1, 2, 3, None), 0, 0))
        obj[key] = bad
        assert reject(decode_response, obj).reason is Reason.FRAME_INVALID_VALUE

    def test_the_largest_status_fits_in_a_frame(self) -> None:
        """1024 slots at the bound, the counts at theirs, sealed: within the frame limit."""
        summary = PoolSummary(
            SUMMARY.pool_status,
            SUMMARY.pid,
            MAX_WORKERS,
            SUMMARY.ready_worker_count,
            SUMMARY.driver,
            SUMMARY.control_transport,
            SUMMARY.endpoint_hash,
        )
        frame = StatusResponse(summary, (MAX_RSS_KIB,) * MAX_WORKERS, MAX_COUNT, MAX_COUNT)
        line = encode_response(frame, lambda _body: "f" * 64)
        assert decode_response(line) == frame
        assert len(line) <= MAX_FRAME_BYTES

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
