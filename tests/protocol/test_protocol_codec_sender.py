"""The sending side of the public codecs: a frame no reader would accept is refused before it is
written (LocalProtocolError), an exception's type name is sent only when it is code, and no
frame's repr shows its credential or token.
"""

from __future__ import annotations

from typing import Any

import pytest
from codec_samples import CRED, EHASH, NONCE, SECRET, SUMMARY, TOKEN, UNIX_LOCATOR
from frame_checks import echoes

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    ControlRequest,
    Hello,
    PoolSummary,
    StatusResponse,
    StopProgress,
    encode_request,
    encode_response,
)
from coretsia.worker_protocol.exceptions import LocalProtocolError
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.state import PoolState, encode_state
from coretsia.worker_protocol.vocabulary import (
    Driver,
    DriverRequest,
    PoolStatus,
    ShutdownPhase,
    Transport,
    TransportRequest,
)
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Ready,
    TaskFailed,
    encode_worker_frame,
    error_type_name,
)


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
