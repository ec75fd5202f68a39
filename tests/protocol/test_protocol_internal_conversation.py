"""The rules both internal conversations (guardian and proc-host channels) share, checked on
both ends of each without sockets: every legal and illegal move of the table, the version
check of the handshake, one answer per spawn, the close; and, fuzzed, that both ends always
agree and that no bytes crash either.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from internal_pairs import (
    ANSWERER,
    BOTH,
    CHANNELS,
    EXITED,
    OPENER,
    SPAWN,
    SPAWN_FAILED,
    SPAWNED,
    VERSION,
    WELCOME,
    Channel,
    Pair,
    Side,
    at,
    drain,
    every_state,
    other,
    read_raises,
    running,
)

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    WorkerError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal import guardian as g


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
