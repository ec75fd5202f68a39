"""LineFramer: cutting a byte stream into bounded newline-delimited frames, sans-IO."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES, LineFramer, Need


def drain(framer: LineFramer) -> list[bytes | Need]:
    """Every frame the framer can give now, followed by the first Need it reports."""
    out: list[bytes | Need] = []
    while True:
        item = framer.next_frame()
        out.append(item)
        if isinstance(item, Need):
            return out


class TestCutting:
    def test_empty_framer_needs_data(self) -> None:
        """A framer that has seen nothing asks for data."""
        assert LineFramer().next_frame() is Need.DATA

    def test_one_line_is_one_frame_without_its_newline(self) -> None:
        """A complete line comes out as one frame, the newline removed."""
        framer = LineFramer()
        framer.receive_data(b'{"a":1}\n')
        assert drain(framer) == [b'{"a":1}', Need.DATA]

    def test_partial_line_waits_for_more(self) -> None:
        """Bytes without a newline are held back until the line is complete."""
        framer = LineFramer()
        framer.receive_data(b'{"a":')
        assert framer.next_frame() is Need.DATA
        framer.receive_data(b"1}\n")
        assert framer.next_frame() == b'{"a":1}'

    def test_line_split_into_single_bytes(self) -> None:
        """A line fed one byte at a time is reassembled exactly."""
        framer = LineFramer()
        for byte in b"hello\n":
            assert framer.next_frame() is Need.DATA
            framer.receive_data(bytes([byte]))
        assert framer.next_frame() == b"hello"

    def test_merged_chunk_yields_every_frame_in_order(self) -> None:
        """Several lines in one chunk come out one by one, in order."""
        framer = LineFramer()
        framer.receive_data(b"one\ntwo\nthree\n")
        assert drain(framer) == [b"one", b"two", b"three", Need.DATA]

    def test_chunk_boundary_inside_a_second_frame(self) -> None:
        """A chunk that ends mid-frame keeps the tail for the next chunk."""
        framer = LineFramer()
        framer.receive_data(b"one\ntw")
        assert drain(framer) == [b"one", Need.DATA]
        framer.receive_data(b"o\n")
        assert drain(framer) == [b"two", Need.DATA]

    def test_empty_line_is_an_empty_frame(self) -> None:
        """A bare newline is an empty frame (the decoder, not the framer, rejects it)."""
        framer = LineFramer()
        framer.receive_data(b"\n")
        assert framer.next_frame() == b""

    def test_buffered_counts_unreturned_bytes(self) -> None:
        """``buffered`` reports the bytes not yet handed out as a frame."""
        framer = LineFramer()
        framer.receive_data(b"ab\ncd")
        assert framer.next_frame() == b"ab"
        assert framer.buffered == 2


class TestSizeBound:
    def test_default_bound_is_max_frame_bytes(self) -> None:
        """A frame of exactly MAX_FRAME_BYTES is accepted by a default framer."""
        framer = LineFramer()
        framer.receive_data(b"x" * MAX_FRAME_BYTES + b"\n")
        assert framer.next_frame() == b"x" * MAX_FRAME_BYTES

    def test_frame_at_the_limit_is_accepted(self) -> None:
        """A frame exactly max_frame_bytes long (newline excluded) passes."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"12345678\n")
        assert framer.next_frame() == b"12345678"

    def test_oversized_frame_with_newline_is_rejected(self) -> None:
        """A complete line one byte over the limit is worker-frame-oversized."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"123456789\n")
        with pytest.raises(RemoteProtocolError) as info:
            framer.next_frame()
        assert info.value.reason is Reason.FRAME_OVERSIZED

    def test_oversized_frame_without_newline_is_rejected_before_it_ends(self) -> None:
        """A peer that never sends a newline is cut off once the limit is passed."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"123456789")
        with pytest.raises(RemoteProtocolError) as info:
            framer.next_frame()
        assert info.value.reason is Reason.FRAME_OVERSIZED

    def test_limit_reached_without_newline_still_waits(self) -> None:
        """Exactly max_frame_bytes without a newline is not yet an error."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"12345678")
        assert framer.next_frame() is Need.DATA

    def test_oversize_is_detected_across_chunks(self) -> None:
        """Small chunks that add up past the limit are rejected too."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"12345")
        assert framer.next_frame() is Need.DATA
        framer.receive_data(b"6789")
        with pytest.raises(RemoteProtocolError) as info:
            framer.next_frame()
        assert info.value.reason is Reason.FRAME_OVERSIZED

    def test_oversized_second_frame_after_a_good_one(self) -> None:
        """A good frame is returned before the oversized one behind it is refused."""
        framer = LineFramer(max_frame_bytes=4)
        framer.receive_data(b"ok\n" + b"x" * 10 + b"\n")
        assert framer.next_frame() == b"ok"
        with pytest.raises(RemoteProtocolError) as info:
            framer.next_frame()
        assert info.value.reason is Reason.FRAME_OVERSIZED

    def test_oversize_error_does_not_echo_the_bytes(self) -> None:
        """The oversize error carries no fragment of the offending frame."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"SECRETSECRETSECRET")
        with pytest.raises(RemoteProtocolError) as info:
            framer.next_frame()
        text = str(info.value) + repr(info.value) + repr(info.value.args)
        assert "SECRET" not in text


class TestEndOfStream:
    def test_clean_close_between_frames(self) -> None:
        """An end of stream right after a newline is a clean close."""
        framer = LineFramer()
        framer.receive_data(b"a\n")
        framer.receive_data(b"")
        assert drain(framer) == [b"a", Need.CLOSED]

    def test_clean_close_is_reported_repeatedly(self) -> None:
        """Asking again after a clean close still says CLOSED."""
        framer = LineFramer()
        framer.receive_data(b"")
        assert framer.next_frame() is Need.CLOSED
        assert framer.next_frame() is Need.CLOSED

    def test_close_mid_frame_is_truncation(self) -> None:
        """An end of stream in the middle of a line is worker-frame-truncated."""
        framer = LineFramer()
        framer.receive_data(b'{"a":1')
        framer.receive_data(b"")
        with pytest.raises(RemoteProtocolError) as info:
            framer.next_frame()
        assert info.value.reason is Reason.FRAME_TRUNCATED

    def test_frames_before_a_truncated_tail_are_delivered(self) -> None:
        """Whole frames buffered before a truncated tail still come out first."""
        framer = LineFramer()
        framer.receive_data(b"a\nb\nc")
        framer.receive_data(b"")
        assert framer.next_frame() == b"a"
        assert framer.next_frame() == b"b"
        with pytest.raises(RemoteProtocolError):
            framer.next_frame()

    def test_receive_after_close_is_a_local_error(self) -> None:
        """Feeding bytes after the end of stream is our own bug: LocalProtocolError."""
        framer = LineFramer()
        framer.receive_data(b"")
        with pytest.raises(LocalProtocolError) as info:
            framer.receive_data(b"more")
        assert info.value.reason is Reason.FRAME_UNEXPECTED

    def test_second_end_of_stream_is_a_local_error(self) -> None:
        """Marking the end of stream twice is also a LocalProtocolError."""
        framer = LineFramer()
        framer.receive_data(b"")
        with pytest.raises(LocalProtocolError):
            framer.receive_data(b"")


class TestBufferBound:
    def test_feeding_past_the_bound_is_a_local_error(self) -> None:
        """Feeding a framer that holds more than a frame's worth is our own bug."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"a\n" * 5)
        with pytest.raises(LocalProtocolError) as info:
            framer.receive_data(b"more")
        assert info.value.reason is Reason.FRAME_OVERSIZED

    def test_draining_makes_room_again(self) -> None:
        """Once the frames are taken, the framer accepts data again."""
        framer = LineFramer(max_frame_bytes=8)
        framer.receive_data(b"a\n" * 5)
        assert drain(framer) == [b"a"] * 5 + [Need.DATA]
        framer.receive_data(b"b\n")
        assert framer.next_frame() == b"b"

    @settings(max_examples=200, deadline=None)
    @given(chunks=st.lists(st.binary(min_size=1, max_size=40), max_size=20))
    def test_buffer_never_exceeds_the_bound_plus_one_chunk(self, chunks: list[bytes]) -> None:
        """Fed only when it asks, a framer holds at most the limit plus the last chunk."""
        framer = LineFramer(max_frame_bytes=16)
        lines = b"".join(chunks).split(b"\n")

        def feed() -> list[bytes]:
            frames: list[bytes] = []
            for chunk in chunks:
                framer.receive_data(chunk)
                assert framer.buffered <= 16 + len(chunk)
                while isinstance(frame := framer.next_frame(), bytes):
                    frames.append(frame)
                assert framer.buffered <= 16
            return frames

        if any(len(line) > 16 for line in lines):
            with pytest.raises(RemoteProtocolError) as info:
                feed()
            assert info.value.reason is Reason.FRAME_OVERSIZED
        else:
            assert feed() == lines[:-1]
