"""Property tests of every codec: any valid frame, generated from the strategies of
``tests/support/frame_strategies.py``, round-trips to byte-identical JSON.
"""

from __future__ import annotations

import pytest
from frame_strategies import CODECS, FUZZ_EACH, NAMES, safe_paths
from hypothesis import given
from hypothesis import strategies as st

from coretsia.worker_protocol.paths import is_safe_relative_path


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


class TestPathStrategy:
    @FUZZ_EACH
    @given(path=safe_paths)
    def test_generated_paths_are_safe(self, path: str) -> None:
        """The strategy of safe paths only yields paths the protocol accepts."""
        assert is_safe_relative_path(path)
