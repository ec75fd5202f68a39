"""The worker channel's conversation, both ends, without sockets or processes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import Reason, SourceFault
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.worker_channel import (
    Failed,
    Heartbeat,
    Ready,
    Retire,
    Retiring,
    ShutdownRequest,
    SourceAvailable,
    SourceUnavailable,
    TaskFailed,
    TaskLeaseLost,
    WorkerFrame,
    encode_retire,
    encode_worker_frame,
)
from coretsia.worker_protocol.worker_conversation import (
    Readiness,
    Retirement,
    SupervisorConversation,
    WorkerConversation,
)

ANY_TIME: tuple[WorkerFrame, ...] = (
    Failed(Reason.CHILD_START_FAILED),
    TaskFailed("ValueError", 1, retried=True),
    ShutdownRequest(),
    TaskLeaseLost(),
)
AFTER_READY: tuple[WorkerFrame, ...] = (
    Heartbeat(),
    SourceUnavailable(SourceFault.UNREACHABLE),
    SourceAvailable(),
)


def received(conversation: SupervisorConversation, *frames: WorkerFrame) -> list[object]:
    """Feed the frames as one chunk; every event until the conversation needs data."""
    return received_bytes(conversation, b"".join(encode_worker_frame(f) for f in frames))


def received_bytes(conversation: SupervisorConversation, data: bytes) -> list[object]:
    """Feed ``data``; every event until the conversation needs data."""
    conversation.receive_data(data)
    events: list[object] = []
    while not isinstance(event := conversation.next_event(), Need):
        events.append(event)
    return events


class TestSupervisorEnd:
    def test_ready_once(self) -> None:
        """ready moves the worker from booting to ready."""
        conversation = SupervisorConversation()
        assert conversation.readiness is Readiness.BOOTING
        assert received(conversation, Ready()) == [Ready()]
        assert conversation.readiness is Readiness.READY

    @pytest.mark.parametrize("frame", ANY_TIME, ids=lambda f: type(f).__name__)
    def test_any_time_frames_before_and_after_ready(self, frame: WorkerFrame) -> None:
        """failed, task-failed and shutdown-request pass before and after ready."""
        conversation = SupervisorConversation()
        assert received(conversation, frame, Ready(), frame) == [frame, Ready(), frame]

    def test_retiring_is_reported_once(self) -> None:
        """A repeated retiring is the same request: reported once."""
        conversation = SupervisorConversation()
        assert received(conversation, Ready(), Retiring(), Retiring()) == [Ready(), Retiring()]
        assert conversation.retirement is Retirement.ASKED

    def test_grant_answers_retiring_once(self) -> None:
        """retire goes only in answer to retiring, and once."""
        conversation = SupervisorConversation()
        with pytest.raises(LocalProtocolError):
            conversation.send_retire()
        received(conversation, Ready(), Retiring())
        assert conversation.send_retire() == encode_retire()
        assert conversation.retirement is Retirement.GRANTED
        with pytest.raises(LocalProtocolError):
            conversation.send_retire()
        assert received(conversation, Retiring()) == []  # asked already: nothing new

    def test_heartbeats_after_ready_any_number_of_times(self) -> None:
        """heartbeat after ready, as often as sent, around the retirement too."""
        conversation = SupervisorConversation()
        frames = (Ready(), Heartbeat(), Heartbeat(), Retiring(), Heartbeat())
        assert received(conversation, *frames) == list(frames)
        conversation.send_retire()
        assert received(conversation, Heartbeat()) == [Heartbeat()]

    @pytest.mark.parametrize("frame", AFTER_READY, ids=lambda f: type(f).__name__)
    def test_after_ready_frames_before_ready_are_a_readiness_failure(
        self, frame: WorkerFrame
    ) -> None:
        """A booting worker has nothing to beat for, and its source's outage is its
        assert_ready's business: worker-readiness-invalid; after ready, any number."""
        conversation = SupervisorConversation()
        with pytest.raises(RemoteProtocolError) as info:
            received(conversation, frame, Ready())
        assert info.value.reason is Reason.FRAME_UNEXPECTED
        assert conversation.failure().reason is Reason.READINESS_INVALID
        ready = SupervisorConversation()
        assert received(ready, Ready(), frame, frame) == [Ready(), frame, frame]
        with pytest.raises(LocalProtocolError):
            WorkerConversation().send(frame)

    def test_close_between_frames(self) -> None:
        """The worker's end of stream between frames is CLOSED."""
        conversation = SupervisorConversation()
        received(conversation, Ready())
        conversation.receive_data(b"")
        assert conversation.next_event() is Need.CLOSED

    @pytest.mark.parametrize(
        "frames",
        [(Ready(), Ready()), (Ready("a" * 64),), (Ready(), Ready("a" * 64))],
        ids=["twice", "token", "token-after-ready"],
    )
    def test_readiness_violations(self, frames: tuple[WorkerFrame, ...]) -> None:
        """A second ready, or one with a token: worker-readiness-invalid, whenever."""
        conversation = SupervisorConversation()
        with pytest.raises(RemoteProtocolError) as info:
            received(conversation, *frames)
        assert info.value.reason is Reason.FRAME_UNEXPECTED
        assert conversation.readiness is Readiness.BROKEN
        failure = conversation.failure()
        assert isinstance(failure, WorkerStartFailedError)
        assert failure.reason is Reason.READINESS_INVALID

    def test_garbage_before_ready_is_a_readiness_failure(self) -> None:
        """A frame that does not decode while booting: worker-readiness-invalid."""
        conversation = SupervisorConversation()
        conversation.receive_data(b"garbage\n")
        with pytest.raises(RemoteProtocolError):
            conversation.next_event()
        assert conversation.failure().reason is Reason.READINESS_INVALID

    def test_garbage_after_ready_is_a_lifecycle_failure(self) -> None:
        """A frame that does not decode once ready: worker-lifecycle-failed."""
        conversation = SupervisorConversation()
        received(conversation, Ready())
        conversation.receive_data(b'{"type":"ready"}\n')
        with pytest.raises(RemoteProtocolError):
            conversation.next_event()
        failure = conversation.failure()
        assert isinstance(failure, WorkerLifecycleFailedError)
        assert failure.reason is Reason.LIFECYCLE_FAILED

    def test_truncated_tail_is_a_violation(self) -> None:
        """An end of stream in the middle of a frame breaks the conversation."""
        conversation = SupervisorConversation()
        received(conversation, Ready())
        conversation.receive_data(b'{"type":')
        assert conversation.next_event() is Need.DATA
        conversation.receive_data(b"")
        with pytest.raises(RemoteProtocolError) as info:
            conversation.next_event()
        assert info.value.reason is Reason.FRAME_TRUNCATED

    def test_broken_stays_broken(self) -> None:
        """After a violation every next_event raises, whatever is buffered."""
        conversation = SupervisorConversation()
        with pytest.raises(RemoteProtocolError):
            received(conversation, Ready("a" * 64), Ready())
        with pytest.raises(LocalProtocolError):
            conversation.next_event()


class TestWorkerEnd:
    def test_sends_ready_once(self) -> None:
        """ready goes once, and only without a token; the bytes are the frame's."""
        conversation = WorkerConversation()
        states = [conversation.ready]
        with pytest.raises(LocalProtocolError) as info:
            conversation.send(Ready("a" * 64))
        assert info.value.reason is Reason.FRAME_UNEXPECTED
        states.append(conversation.ready)  # a refused frame changes nothing
        assert conversation.send(Ready()) == encode_worker_frame(Ready())
        states.append(conversation.ready)
        with pytest.raises(LocalProtocolError):
            conversation.send(Ready())
        assert states == [False, False, True]

    @pytest.mark.parametrize("frame", ANY_TIME, ids=lambda f: type(f).__name__)
    def test_any_time_frames_go_before_and_after_ready(self, frame: WorkerFrame) -> None:
        """failed, task-failed and shutdown-request go whenever, as often as needed."""
        conversation = WorkerConversation()
        sent = [conversation.send(f) for f in (frame, frame, Ready(), frame)]
        assert sent == [encode_worker_frame(f) for f in (frame, frame, Ready(), frame)]

    def test_beats_only_once_ready(self) -> None:
        """heartbeat before ready is the worker's own bug; after it, whenever."""
        conversation = WorkerConversation()
        with pytest.raises(LocalProtocolError) as info:
            conversation.send(Heartbeat())
        assert info.value.reason is Reason.FRAME_UNEXPECTED
        conversation.send(Ready())
        sent = [conversation.send(Heartbeat()), conversation.send(Heartbeat())]
        assert sent == [encode_worker_frame(Heartbeat())] * 2
        conversation.send(Retiring())
        conversation.receive_data(encode_retire())
        assert conversation.next_event() == Retire()
        assert conversation.send(Heartbeat()) == encode_worker_frame(Heartbeat())

    def test_asks_once(self) -> None:
        """retiring goes once: a second one is the worker's own bug."""
        conversation = WorkerConversation()
        conversation.send(Ready())
        asked = [conversation.asked]
        assert conversation.send(Retiring()) == encode_worker_frame(Retiring())
        asked.append(conversation.asked)
        with pytest.raises(LocalProtocolError):
            conversation.send(Retiring())
        assert asked == [False, True]
        assert conversation.retirement is Retirement.ASKED

    def test_sending_after_a_broken_read(self) -> None:
        """A supervisor that broke the rules can still be told why the worker leaves."""
        conversation = WorkerConversation()
        conversation.receive_data(encode_retire())
        with pytest.raises(RemoteProtocolError):
            conversation.next_event()
        failed = Failed(Reason.LIFECYCLE_FAILED)
        assert conversation.send(failed) == encode_worker_frame(failed)

    def test_grant_after_asking(self) -> None:
        """retire after retiring is the grant."""
        conversation = WorkerConversation()
        conversation.send(Retiring())
        assert conversation.next_event() is Need.DATA
        conversation.receive_data(encode_retire())
        assert conversation.next_event() == Retire()
        assert conversation.retirement is Retirement.GRANTED

    def test_unasked_grant_is_refused(self) -> None:
        """A retire the worker never asked for is a protocol violation."""
        conversation = WorkerConversation()
        conversation.receive_data(encode_retire())
        with pytest.raises(RemoteProtocolError) as info:
            conversation.next_event()
        assert info.value.reason is Reason.FRAME_UNEXPECTED
        with pytest.raises(LocalProtocolError):
            conversation.next_event()

    def test_second_grant_is_refused(self) -> None:
        """One grant per request."""
        conversation = WorkerConversation()
        conversation.send(Retiring())
        conversation.receive_data(encode_retire() * 2)
        assert conversation.next_event() == Retire()
        with pytest.raises(RemoteProtocolError):
            conversation.next_event()

    def test_garbage_is_refused(self) -> None:
        """Anything but a retire frame is a protocol violation."""
        conversation = WorkerConversation()
        conversation.send(Retiring())
        conversation.receive_data(encode_worker_frame(Ready()))
        with pytest.raises(RemoteProtocolError):
            conversation.next_event()

    def test_close(self) -> None:
        """The supervisor's end of stream is CLOSED (nobody to ask any more)."""
        conversation = WorkerConversation()
        conversation.send(Retiring())
        conversation.receive_data(b"")
        assert conversation.next_event() is Need.CLOSED


def test_grant_travels_from_one_end_to_the_other() -> None:
    """The supervisor's grant is what the worker's end accepts."""
    supervisor, worker = SupervisorConversation(), WorkerConversation()
    supervisor.receive_data(worker.send(Ready()) + worker.send(Retiring()))
    assert [supervisor.next_event(), supervisor.next_event()] == [Ready(), Retiring()]
    worker.receive_data(supervisor.send_retire())
    assert worker.next_event() == Retire()


# -- properties ------------------------------------------------------------------------

FUZZ = settings(max_examples=200, deadline=None)
frames = st.sampled_from((Ready(), Retiring(), Heartbeat(), *ANY_TIME, Ready("b" * 64)))


@FUZZ
@given(sequence=st.lists(frames, max_size=10))
def test_readiness_rule_over_any_sequence(sequence: list[WorkerFrame]) -> None:
    """The conversation breaks exactly at the first ready that is not the first tokenless
    one, or at a heartbeat before ready."""
    conversation = SupervisorConversation()
    seen_ready = False
    for frame in sequence:
        conversation.receive_data(encode_worker_frame(frame))
        illegal = (isinstance(frame, Ready) and (seen_ready or frame.token is not None)) or (
            isinstance(frame, Heartbeat) and not seen_ready
        )
        if illegal:
            with pytest.raises(RemoteProtocolError):
                conversation.next_event()
            assert conversation.failure().reason is Reason.READINESS_INVALID
            return
        while not isinstance(conversation.next_event(), Need):
            pass
        seen_ready = seen_ready or isinstance(frame, Ready)
    assert conversation.readiness is (Readiness.READY if seen_ready else Readiness.BOOTING)


@FUZZ
@given(sequence=st.lists(frames, max_size=10))
def test_what_the_worker_sends_the_supervisor_reads(sequence: list[WorkerFrame]) -> None:
    """The worker's end refuses exactly a second or token-carrying ready, a second
    retiring and a heartbeat before ready; everything it lets out, the supervisor's end
    reads as sent, once each."""
    worker, supervisor = WorkerConversation(), SupervisorConversation()
    for frame in sequence:
        illegal = (
            (isinstance(frame, Ready) and (worker.ready or frame.token is not None))
            or (isinstance(frame, Retiring) and worker.asked)
            or (isinstance(frame, Heartbeat) and not worker.ready)
        )
        if illegal:
            with pytest.raises(LocalProtocolError):
                worker.send(frame)
            continue
        assert received_bytes(supervisor, worker.send(frame)) == [frame]
    assert supervisor.readiness is (Readiness.READY if worker.ready else Readiness.BOOTING)
    assert supervisor.retirement is worker.retirement


def _asked() -> WorkerConversation:
    conversation = WorkerConversation()
    conversation.send(Retiring())
    return conversation


@pytest.mark.parametrize("end", [SupervisorConversation, _asked], ids=["supervisor", "worker"])
@FUZZ
@given(chunks=st.lists(st.binary(min_size=1, max_size=64), max_size=12))
def test_arbitrary_bytes_never_crash_either_end(
    end: Callable[[], SupervisorConversation | WorkerConversation], chunks: list[bytes]
) -> None:
    """Any bytes: frames, Need, or a ProtocolError; never another exception."""
    conversation = end()
    try:
        for chunk in [*chunks, b""]:
            conversation.receive_data(chunk)
            while not isinstance(conversation.next_event(), Need):
                pass
    except ProtocolError:
        with pytest.raises(LocalProtocolError):
            conversation.next_event()  # and it stays broken
