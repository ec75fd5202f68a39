"""The internal conversations (guardian and proc-host channels), both ends, without sockets.

A :class:`Pair` joins an opener's end and an answerer's end in memory (h11's
``ConnectionPair``), so a test reads as the exchange it checks. The rules both channels
share are checked on both; each channel's own rules below them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    WorkerAlreadyRunningError,
    WorkerError,
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import guardian_conversation as gc
from coretsia.worker_protocol.internal import proc_host as p
from coretsia.worker_protocol.internal import proc_host_conversation as pc
from coretsia.worker_protocol.internal.conversation import Conversation, Side
from coretsia.worker_protocol.vocabulary import Containment, Driver, ShutdownPhase

OPENER, ANSWERER = Side.OPENER, Side.ANSWERER
E = TypeVar("E", bound=WorkerError)
VERSION = "1.2.3"
SPAWN = g.Spawn(slot=0, argv=("python", "-c", "pass"))
SPAWNED = g.Spawned(slot=0, pid=1234)
SPAWN_FAILED = g.SpawnFailed(slot=0, reason=Reason.FORK_FAILED)
EXITED = g.Exited(slot=0, exit_kind="exit-0")
WELCOME = g.Welcome(peer_version=VERSION, pid=77)


def hello(version: str = VERSION) -> g.Hello:
    return g.Hello(
        peer_version=version,
        driver=Driver.FORK,
        stop_timeout_ms=1000,
        force_kill_timeout_ms=500,
        umask=0o022,
        log_json=False,
        containment=Containment.PROCESS,
        root_id="0" * 16,
    )


class Channel(NamedTuple):
    """What the shared tests need to know of one channel."""

    name: str
    opener: Callable[[], Conversation[Any, Any]]
    answerer: Callable[[str], Conversation[Any, Any]]
    encode: Callable[[Any], bytes]
    moves: Mapping[tuple[Any, Side, type], Any]
    hello: Callable[[str], Any]
    frames: tuple[Any, ...]
    """One frame of every class the channel's codec knows."""
    main: tuple[tuple[Side, Any], ...]
    """The exchange from the first state to the last, one state per step."""
    refusal: Any
    """A ``refused`` the answerer may send."""


GUARDIAN = Channel(
    "guardian",
    gc.SupervisorEnd,
    gc.GuardianEnd,
    g.encode_guardian_frame,
    gc.MOVES,
    hello,
    (
        hello(),
        WELCOME,
        g.Locked(),
        g.Refused(reason=Reason.ALREADY_RUNNING),
        SPAWN,
        SPAWNED,
        SPAWN_FAILED,
        EXITED,
        g.HostStarted(pid=4321),
        g.GenerationFailed(reason=Reason.PROCESS_HOST_FAILED),
        g.Shutdown(),
        g.Phase(phase=ShutdownPhase.TERMINATE, budget_ms=1000),
        g.Drained(clean=True),
        g.Release(),
        g.Released(),
    ),
    (
        (OPENER, hello()),
        (ANSWERER, WELCOME),
        (ANSWERER, g.Locked()),
        (OPENER, g.Shutdown()),
        (ANSWERER, g.Drained(clean=True)),
        (OPENER, g.Release()),
        (ANSWERER, g.Released()),
    ),
    g.Refused(reason=Reason.ALREADY_RUNNING),
)
PROC_HOST = Channel(
    "proc-host",
    pc.DriverEnd,
    pc.HostEnd,
    p.encode_proc_host_frame,
    pc.MOVES,
    lambda version: p.HostHello(peer_version=version),
    (
        p.HostHello(peer_version=VERSION),
        WELCOME,
        g.Refused(reason=Reason.PEER_VERSION_MISMATCH),
        SPAWN,
        SPAWNED,
        SPAWN_FAILED,
        EXITED,
        p.Signal(slot=0, signal=p.SignalName.TERM),
        p.Quit(),
    ),
    ((OPENER, p.HostHello(peer_version=VERSION)), (ANSWERER, WELCOME), (OPENER, p.Quit())),
    g.Refused(reason=Reason.PEER_VERSION_MISMATCH),
)
CHANNELS = [GUARDIAN, PROC_HOST]
BOTH = pytest.mark.parametrize("channel", CHANNELS, ids=lambda c: c.name)


def other(side: Side) -> Side:
    return ANSWERER if side is OPENER else OPENER


def drain(end: Conversation[Any, Any]) -> list[object]:
    """Every frame the end has whole, until it needs data (or sees the close)."""
    events: list[object] = []
    while not isinstance(event := end.next_event(), Need):
        events.append(event)
    return events


class Pair:
    """An opener's end and an answerer's end, joined in memory."""

    def __init__(self, channel: Channel) -> None:
        self.ends = {OPENER: channel.opener(), ANSWERER: channel.answerer(VERSION)}

    @property
    def opener(self) -> Any:
        return self.ends[OPENER]

    @property
    def answerer(self) -> Any:
        return self.ends[ANSWERER]

    def say(self, side: Side, frame: object) -> list[object]:
        """``side`` sends ``frame``; what the other end reads of it."""
        data = self.ends[side].send(frame)
        receiver = self.ends[other(side)]
        receiver.receive_data(data)
        return drain(receiver)

    def states(self) -> tuple[Any, Any]:
        return self.opener.state, self.answerer.state


def read_raises(end: Conversation[Any, Any], data: bytes, error: type[E]) -> E:
    """Feed ``data`` to ``end``; the ``error`` its next event raises."""
    end.receive_data(data)
    with pytest.raises(error) as info:
        end.next_event()
    return info.value


def every_state(channel: Channel) -> list[Any]:
    states: type[enum.Enum] = type(channel.opener().state)
    return list(states)


def at(channel: Channel, state: Any, *, owing: bool = False) -> Pair:
    """A pair whose two ends stand in ``state``, reached the legal way; ``owing``: with
    one spawn of slot 0 asked on the way and not answered yet."""
    pair = Pair(channel)
    refused = state.value == "refused"
    steps = (channel.main[0], (ANSWERER, channel.refusal)) if refused else channel.main
    for side, frame in steps:
        if owing and pair.opener.state.value == "running":
            pair.say(OPENER, SPAWN)
            owing = False
        if pair.opener.state is state:
            break
        try:
            pair.say(side, frame)
        except WorkerError:
            assert frame is channel.refusal  # the opener raises the refusal it reads
    assert pair.states() == (state, state)
    return pair


def running(channel: Channel) -> Pair:
    return at(channel, type(channel.opener().state).RUNNING)


def _moves(*, legal: bool) -> list[tuple[Channel, Any, Side, Any]]:
    return [
        (channel, state, side, frame)
        for channel in CHANNELS
        for state in every_state(channel)
        for side in Side
        for frame in channel.frames
        if ((state, side, type(frame)) in channel.moves) is legal
    ]


def _ids(moves: list[tuple[Channel, Any, Side, Any]]) -> list[str]:
    return [f"{c.name}-{s.value}-{d.value}-{type(f).__name__}" for c, s, d, f in moves]


LEGAL, ILLEGAL = _moves(legal=True), _moves(legal=False)
LEGAL_IDS, ILLEGAL_IDS = _ids(LEGAL), _ids(ILLEGAL)


# -- the rules both channels share ------------------------------------------------------


@BOTH
def test_the_main_exchange(channel: Channel) -> None:
    """Each step of the main exchange is read as sent and moves both ends alike."""
    pair = Pair(channel)
    for side, frame in channel.main:
        before = pair.opener.state
        assert pair.say(side, frame) == [frame]
        assert pair.states() == (channel.moves[(before, side, type(frame))],) * 2


@pytest.mark.parametrize(("channel", "state", "side", "frame"), LEGAL, ids=LEGAL_IDS)
def test_every_legal_move(channel: Channel, state: Any, side: Side, frame: object) -> None:
    """Every move of the table is taken alike by the end that sends it and the end that
    reads it (a refusal is then raised by the opener, as its error)."""
    pair = at(channel, state, owing=True)
    end = channel.moves[(state, side, type(frame))]
    try:
        assert pair.say(side, frame) == [frame]
    except WorkerError:
        assert isinstance(frame, g.Refused)
    assert pair.states() == (end, end)


@pytest.mark.parametrize(("channel", "state", "side", "frame"), ILLEGAL, ids=ILLEGAL_IDS)
def test_every_illegal_move(channel: Channel, state: Any, side: Side, frame: object) -> None:
    """A move the table lacks is refused by the end asked to send it (Local, and that end
    is broken from then on) and by the end that reads it (Remote)."""
    sender = at(channel, state).ends[side]
    with pytest.raises(LocalProtocolError) as info:
        sender.send(frame)
    assert info.value.reason is Reason.FRAME_UNEXPECTED
    with pytest.raises(LocalProtocolError):
        sender.send(frame)
    receiver = at(channel, state).ends[other(side)]
    # The opener stopped reading when it raised the refusal (rule 5).
    reading_over = side is ANSWERER and state.value == "refused"
    expected: type[ProtocolError] = LocalProtocolError if reading_over else RemoteProtocolError
    refused = read_raises(receiver, channel.encode(frame), expected)
    assert refused.reason is Reason.FRAME_UNEXPECTED


@BOTH
def test_the_answerer_checks_the_hello(channel: Channel) -> None:
    """A hello of another version raises at the answerer, which may then only refuse."""
    pair = Pair(channel)
    with pytest.raises(WorkerStartFailedError) as info:
        pair.say(OPENER, channel.hello("0.0.0-other"))
    assert info.value.reason is Reason.PEER_VERSION_MISMATCH
    with pytest.raises(LocalProtocolError):
        pair.answerer.send(WELCOME)
    refusal = channel.answerer(VERSION)
    read_raises(refusal, channel.encode(channel.hello("0.0.0-other")), WorkerStartFailedError)
    assert refusal.send(g.Refused(reason=Reason.PEER_VERSION_MISMATCH))
    assert refusal.state.value == "refused"


@BOTH
def test_the_opener_checks_the_welcome(channel: Channel) -> None:
    """A welcome of another version raises at the opener."""
    pair = Pair(channel)
    pair.say(OPENER, channel.hello(VERSION))
    welcome = channel.encode(g.Welcome(peer_version="0.0.0-other", pid=1))
    mismatch = read_raises(pair.opener, welcome, WorkerStartFailedError)
    assert mismatch.reason is Reason.PEER_VERSION_MISMATCH


@BOTH
@pytest.mark.parametrize("answer", [SPAWNED, SPAWN_FAILED], ids=["spawned", "spawn-failed"])
def test_no_answer_without_a_spawn(channel: Channel, answer: object) -> None:
    """An answer no spawn is owed is refused at both ends."""
    with pytest.raises(LocalProtocolError):
        running(channel).answerer.send(answer)
    refused = read_raises(running(channel).opener, channel.encode(answer), RemoteProtocolError)
    assert refused.reason is Reason.FRAME_UNEXPECTED


@BOTH
def test_one_answer_per_spawn(channel: Channel) -> None:
    """Each spawn of a slot is answered once; another slot's spawn owes nothing to it."""
    pair = running(channel)
    pair.say(OPENER, SPAWN)
    pair.say(OPENER, SPAWN)
    assert pair.say(ANSWERER, SPAWNED) == [SPAWNED]
    assert pair.say(ANSWERER, SPAWN_FAILED) == [SPAWN_FAILED]
    pair.say(OPENER, g.Spawn(slot=1, argv=()))
    with pytest.raises(LocalProtocolError):
        pair.answerer.send(SPAWNED)


@BOTH
def test_reading_ends_at_the_close(channel: Channel) -> None:
    """A close between frames is CLOSED, and stays so; a torn frame is an error, after
    which reading raises."""
    opener = running(channel).opener
    opener.receive_data(b"")
    assert opener.next_event() is Need.CLOSED
    assert opener.next_event() is Need.CLOSED
    opener = running(channel).opener
    opener.receive_data(channel.encode(EXITED)[:5])
    assert read_raises(opener, b"", RemoteProtocolError).reason is Reason.FRAME_TRUNCATED
    with pytest.raises(LocalProtocolError):
        opener.next_event()


# -- properties -------------------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None)


@BOTH
@FUZZ
@given(data=st.data())
def test_both_ends_always_agree(channel: Channel, data: st.DataObject) -> None:
    """From any state, over any sequence: what one end may send, the other reads as sent
    and both then stand in the same state; what it may not send, the other refuses."""
    pair = at(channel, data.draw(st.sampled_from(every_state(channel))))
    moves = st.tuples(st.sampled_from(list(Side)), st.sampled_from(channel.frames))
    for side, frame in data.draw(st.lists(moves, max_size=12)):
        sender, receiver = pair.ends[side], pair.ends[other(side)]
        try:
            sent = sender.send(frame)
        except LocalProtocolError:
            read_raises(receiver, channel.encode(frame), ProtocolError)
            return
        receiver.receive_data(sent)
        try:
            assert drain(receiver) == [frame]
        except WorkerError:
            assert isinstance(frame, g.Refused)  # the opener raises the refusal it reads
            return
        finally:
            assert pair.states()[0] is pair.states()[1]


@BOTH
@pytest.mark.parametrize("side", list(Side), ids=lambda s: s.value)
@FUZZ
@given(data=st.data(), chunks=st.lists(st.binary(min_size=1, max_size=64), max_size=12))
def test_arbitrary_bytes_never_crash_either_end(
    channel: Channel, side: Side, data: st.DataObject, chunks: list[bytes]
) -> None:
    """Any bytes, in any state: frames, Need, or a WorkerError; never another exception."""
    end = at(channel, data.draw(st.sampled_from(every_state(channel)))).ends[side]
    try:
        for chunk in [*chunks, b""]:
            end.receive_data(chunk)
            drain(end)
    except WorkerError:
        with pytest.raises(LocalProtocolError):
            end.next_event()  # and reading stays over


# -- the guardian channel's own rules ---------------------------------------------------

G = gc.GuardianState


class TestGuardianChannel:
    @pytest.mark.parametrize(
        ("state", "reason"),
        [
            (G.WELCOME, Reason.PROCESS_HOST_FAILED),
            (G.LOCK, Reason.LIFECYCLE_LOCK_FAILED),
            (G.RUNNING, Reason.PROCESS_HOST_FAILED),
        ],
    )
    def test_an_early_end_means_what_it_interrupted(self, state: G, reason: Reason) -> None:
        """Before welcome or once running, a lost guardian; during the claim, the lock."""
        supervisor = at(GUARDIAN, state).opener
        supervisor.receive_data(b"")
        assert supervisor.next_event() is Need.CLOSED
        failure = supervisor.failure()
        assert isinstance(failure, WorkerLifecycleFailedError)
        assert failure.reason is reason

    @pytest.mark.parametrize("state", [G.WELCOME, G.LOCK])
    def test_a_refusal_is_raised_as_its_error(self, state: G) -> None:
        """refused, at either step of the handshake, raises the error of its reason."""
        pair = at(GUARDIAN, state)
        with pytest.raises(WorkerAlreadyRunningError):
            pair.say(ANSWERER, g.Refused(reason=Reason.ALREADY_RUNNING))
        assert pair.states() == (G.REFUSED, G.REFUSED)

    def test_the_supervisors_loss_is_shutdown_then_release(self) -> None:
        """The guardian contains on its own: phases, drained and released, unasked."""
        guardian = at(GUARDIAN, G.RUNNING).answerer
        guardian.receive_data(b"")
        assert guardian.next_event() is Need.CLOSED
        assert (guardian.state, guardian.supervisor_gone) == (G.SHUTTING_DOWN, True)
        guardian.send(g.Phase(phase=ShutdownPhase.COOPERATIVE, budget_ms=1))
        guardian.send(g.Drained(clean=True))
        assert guardian.state is G.RELEASING
        guardian.send(g.Released())
        assert guardian.state is G.RELEASED

    def test_a_broken_rule_is_the_supervisors_loss(self) -> None:
        """A supervisor frame out of order ends reading; the containment still speaks."""
        guardian = at(GUARDIAN, G.RUNNING).answerer
        read_raises(guardian, g.encode_guardian_frame(g.Release()), RemoteProtocolError)
        assert (guardian.state, guardian.supervisor_gone) == (G.SHUTTING_DOWN, True)
        with pytest.raises(LocalProtocolError):
            guardian.next_event()
        guardian.send(g.Drained(clean=False))
        assert guardian.state is G.RELEASING

    def test_a_loss_after_drained_is_the_release(self) -> None:
        """A supervisor gone while the guardian waits for release: released follows."""
        guardian = at(GUARDIAN, G.DRAINED).answerer
        guardian.receive_data(b"")
        assert guardian.next_event() is Need.CLOSED
        assert guardian.state is G.RELEASING

    def test_a_loss_before_hello_leaves_nothing_to_say(self) -> None:
        """Before hello the guardian has nobody to welcome."""
        guardian = gc.GuardianEnd(VERSION)
        guardian.receive_data(b"")
        assert guardian.next_event() is Need.CLOSED
        with pytest.raises(LocalProtocolError):
            guardian.send(WELCOME)

    def test_a_spawn_may_cross_the_shutdown(self) -> None:
        """A spawn sent after shutdown reaches the guardian, up to the release."""
        pair = at(GUARDIAN, G.SHUTTING_DOWN)
        assert pair.say(OPENER, SPAWN) == [SPAWN]
        pair.say(ANSWERER, g.Drained(clean=True))
        assert pair.say(OPENER, SPAWN) == [SPAWN]
        pair.say(OPENER, g.Release())
        assert pair.say(OPENER, SPAWN) == [SPAWN]

    @pytest.mark.parametrize("state", [G.DRAINED, G.RELEASING])
    def test_a_late_exit_is_reported(self, state: G) -> None:
        """A process that outlived every phase is reported when it is reaped at last."""
        assert at(GUARDIAN, state).say(ANSWERER, EXITED) == [EXITED]


# -- the proc-host channel's own rules --------------------------------------------------

H = pc.HostState


class TestProcHostChannel:
    def test_the_one_refusal_is_a_version_mismatch(self) -> None:
        """refused carries worker-peer-version-mismatch, raised as such by the guardian."""
        other_reason = g.Refused(reason=Reason.ALREADY_RUNNING)
        with pytest.raises(LocalProtocolError) as info:
            at(PROC_HOST, H.WELCOME).answerer.send(other_reason)
        assert (info.value.reason, info.value.path) == (Reason.FRAME_INVALID_VALUE, "$.reason")
        driver = at(PROC_HOST, H.WELCOME).opener
        read_raises(driver, p.encode_proc_host_frame(other_reason), RemoteProtocolError)
        with pytest.raises(WorkerStartFailedError) as mismatch:
            at(PROC_HOST, H.WELCOME).say(ANSWERER, PROC_HOST.refusal)
        assert mismatch.value.reason is Reason.PEER_VERSION_MISMATCH

    def test_reports_sent_before_quit_still_arrive(self) -> None:
        """After quit, answers and exits the proc host sent before it read it are read."""
        pair = running(PROC_HOST)
        pair.say(OPENER, SPAWN)
        pair.say(OPENER, p.Quit())
        assert pair.say(ANSWERER, SPAWNED) == [SPAWNED]
        assert pair.say(ANSWERER, EXITED) == [EXITED]
        with pytest.raises(LocalProtocolError):
            pair.opener.send(p.Signal(slot=0, signal=p.SignalName.KILL))
