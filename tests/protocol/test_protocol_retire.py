"""The one supervisor-to-worker frame: ``retire``."""

from __future__ import annotations

import pytest

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import RemoteProtocolError
from coretsia.worker_protocol.worker_channel import Retire, decode_supervisor_frame, encode_retire


def test_round_trip() -> None:
    """encode_retire decodes to Retire, as deterministic JSON with a newline."""
    assert encode_retire() == b'{"type":"retire","version":1}\n'
    assert decode_supervisor_frame(encode_retire()) == Retire()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"type":"ready","version":1}', Reason.FRAME_UNKNOWN_TYPE),
        (b'{"type":"retire","version":1,"extra":1}', Reason.FRAME_UNKNOWN_KEY),
        (b'{"type":"retire","version":2}', Reason.FRAME_UNSUPPORTED_VERSION),
        (b'{"version":1}', Reason.FRAME_MISSING_KEY),
        (b'{"type":1,"version":1}', Reason.FRAME_WRONG_TYPE),
    ],
)
def test_rejections(line: bytes, reason: Reason) -> None:
    """Anything but an exact retire frame is a protocol violation."""
    with pytest.raises(RemoteProtocolError) as info:
        decode_supervisor_frame(line)
    assert info.value.reason is reason
