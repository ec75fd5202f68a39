"""The internal conversations (guardian and proc-host channels) joined in memory, for the
sans-IO tests of both channels.

A :class:`Pair` joins an opener's end and an answerer's end in memory (h11's
``ConnectionPair``), so a test reads as the exchange it checks; :func:`at` brings a pair to
any state the legal way. A :class:`Channel` tells the shared tests what they need to know of
one channel: its ends, codec, move table, frames and main exchange.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

import pytest

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import CLOSE, Conversation, Table
from coretsia.worker_protocol.exceptions import WorkerError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal import guardian_conversation as gc
from coretsia.worker_protocol.internal import proc_host as p
from coretsia.worker_protocol.internal import proc_host_conversation as pc
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.vocabulary import Containment, Driver, ShutdownPhase


class Side(enum.Enum):
    """An internal channel's two ends, whatever their roles: the tests of both channels."""

    OPENER = "opener"
    ANSWERER = "answerer"


OPENER, ANSWERER = Side.OPENER, Side.ANSWERER
E = TypeVar("E", bound=WorkerError)
VERSION = "1.2.3"
SPAWN = g.Spawn(slot=0, argv=("python", "-c", "pass"))
SPAWNED = g.Spawned(slot=0, pid=1234)
SPAWN_FAILED = g.SpawnFailed(slot=0, reason=Reason.FORK_FAILED)
EXITED = g.Exited(slot=0, exit_kind=ExitKind.EXIT_0)
WELCOME = g.Welcome(peer_version=VERSION, pid=77)


def moves(table: Table) -> dict[tuple[Any, Side, Any], Any]:
    """The table's frame moves by side (the opener's role first), without its close rows."""
    opener = table.roles[0]
    return {
        (state, OPENER if role == opener else ANSWERER, kind): end
        for (state, role, kind), end in table.moves.items()
        if kind is not CLOSE
    }


def hello(version: str = VERSION) -> g.Hello:
    """The supervisor's hello to its guardian, speaking ``version``."""
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
    opener: Callable[[], Conversation]
    answerer: Callable[[str], Conversation]
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
    moves(gc.TABLE),
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
    moves(pc.TABLE),
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
    """The end that reads what ``side`` sends."""
    return ANSWERER if side is OPENER else OPENER


def drain(end: Conversation) -> list[object]:
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


def read_raises(end: Conversation, data: bytes, error: type[E]) -> E:
    """Feed ``data`` to ``end``; the ``error`` its next event raises."""
    end.receive_data(data)
    with pytest.raises(error) as info:
        end.next_event()
    return info.value


def every_state(channel: Channel) -> list[Any]:
    """Every state of the channel's conversation, in declaration order."""
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
    """A pair past its handshake, where spawns and reports flow."""
    return at(channel, type(channel.opener().state).RUNNING)
