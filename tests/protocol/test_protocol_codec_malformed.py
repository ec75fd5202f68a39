"""Bytes that are not a frame at all: duplicate keys, bad UTF-8, not JSON, not an object, too
large; every public decoder refuses them the same way, with an error that carries nothing of
the peer's text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from frame_checks import reject

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import decode_request, decode_response
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
from coretsia.worker_protocol.locator import MAX_LOCATOR_BYTES, decode_locator
from coretsia.worker_protocol.state import MAX_STATE_BYTES, decode_state
from coretsia.worker_protocol.worker_channel import decode_worker_frame

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
