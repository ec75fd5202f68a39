"""What the public codecs write: every frame round-trips exactly, and its bytes are canonical
JSON on one line, so a sealed frame's mac covers the same bytes on both sides.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from codec_samples import CRED, FRAME_IDS, FRAMES, RESPONSE, WORKER
from frame_checks import Codec, obj_of, reject

from coretsia.worker_protocol.catalogue import REASON_CODES, ErrorCode, Reason
from coretsia.worker_protocol.control import (
    ControlRequest,
    ErrorResponse,
    StoppedResponse,
    decode_response,
    encode_request,
    encode_response,
    open_response,
)
from coretsia.worker_protocol.exceptions import LocalProtocolError
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Ready,
    decode_worker_frame,
    encode_worker_frame,
)

MAC = "ffeeddccbbaa99887766554433221100" * 2
WORKER_REASONS = [
    r for r in Reason if REASON_CODES[r] in (ErrorCode.START_FAILED, ErrorCode.LIFECYCLE_FAILED)
]


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
