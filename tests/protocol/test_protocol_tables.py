"""Every channel's table, run by the one engine: for every state, role and frame of each
family, the end of that role may send the frame exactly when its table has the move, and
the other end reads it exactly then (table-driven over the whole product, both roles);
the engine itself knows no frame family; and, fuzzed, two ends joined in memory agree.

The guardian and proc-host tables have their own pair tests
(``test_protocol_internal_conversation.py``), reaching each state the legal way; here the
ends are put in each state directly, so every cell of every table is checked alike.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coretsia.worker_protocol import control_conversation as cc
from coretsia.worker_protocol import conversation_engine as engine
from coretsia.worker_protocol import worker_conversation as wc
from coretsia.worker_protocol.catalogue import HealthReason, Reason, SourceFault
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ErrorResponse,
    HealthResponse,
    Hello,
    PoolSummary,
    StatusResponse,
    StoppedResponse,
    StopProgress,
)
from coretsia.worker_protocol.control_auth import Role
from coretsia.worker_protocol.conversation_engine import CLOSE, REPEAT, Conversation, Table
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal import fork_server_conversation as fc
from coretsia.worker_protocol.internal import guardian_conversation as gc
from coretsia.worker_protocol.internal import proc_host_conversation as pc
from coretsia.worker_protocol.vocabulary import (
    ControlCommand,
    Driver,
    PoolStatus,
    ShutdownPhase,
    Transport,
)
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
)

SUMMARY = PoolSummary(PoolStatus.RUNNING, 1, 2, 2, Driver.FORK, Transport.UNIX, "0" * 32)


class Family(NamedTuple):
    """One channel family: its table, an end of each role, one frame of every kind."""

    name: str
    table: Table
    end: Callable[[Any], Conversation]
    frames: tuple[Any, ...]
    receivable: bool = True
    """Whether a frame sent by one end set in a state reads at the other set alike (the
    control channel's MACs chain over the whole conversation: only sending is checked)."""


def _control(role: Any) -> Conversation:
    cls = cc.ClientConversation if role is Role.CLIENT else cc.ServerConversation
    return cls("c" * 64, Transport.UNIX, "var/tmp/worker.sock")


FAMILIES = [
    Family(
        "control",
        cc.TABLE,
        _control,
        (
            Hello("a" * 64),
            Challenge("b" * 64),
            *(ControlRequest(command) for command in ControlCommand),
            StatusResponse(SUMMARY),
            HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY),
            StopProgress(ShutdownPhase.COOPERATIVE, 1000),
            StoppedResponse(),
            ErrorResponse(Reason.SHUTDOWN_FAILED),
        ),
        receivable=False,
    ),
    Family(
        "worker",
        wc.TABLE,
        lambda role: (
            wc.WorkerConversation() if role is wc.Role.WORKER else wc.SupervisorConversation()
        ),
        (
            Ready(),
            Failed(Reason.CHILD_START_FAILED),
            TaskFailed("ValueError", 1, retried=True),
            ShutdownRequest(),
            TaskLeaseLost(),
            Heartbeat(),
            SourceUnavailable(SourceFault.UNREACHABLE),
            SourceAvailable(),
            Retiring(),
            Retire(),
        ),
    ),
    Family(
        "fork-server",
        fc.TABLE,
        fc.ForkServerConversation,
        (fc.Request(b"1", ("python3", "-c", "pass")), fc.Started(b"1"), fc.Done(b"1")),
    ),
]
IDS = [family.name for family in FAMILIES]


def _cells(family: Family) -> list[tuple[Any, Any, Any]]:
    return [
        (state, role, frame)
        for state in type(family.table.start)
        for role in family.table.roles
        for frame in family.frames
    ]


def _at(family: Family, role: Any, state: Any, frame: Any) -> Conversation:
    end = family.end(role)
    end.state = state
    if isinstance(end, fc.ForkServerConversation) and not isinstance(frame, fc.Request):
        end._requests[b"1"] = fc.RequestState.ASKED  # the request the answer is to
    if isinstance(end, cc.ClientConversation | cc.ServerConversation) and not isinstance(
        frame, ControlRequest
    ):
        end._command = _command_of(state, frame)
    return end


def _command_of(state: Any, frame: Any) -> ControlCommand | None:
    if state is cc.ControlState.STOPPING:
        return ControlCommand.STOP
    if state is cc.ControlState.ANSWER:
        return ControlCommand.HEALTH if isinstance(frame, HealthResponse) else ControlCommand.STATUS
    return None


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_every_cell_of_the_table(family: Family) -> None:
    """Each (state, role, frame): sent by its role's end iff the table has the move, to the
    move's state; read by the other end iff so (a repeat read is dropped, not reported)."""
    table = family.table
    for state, role, frame in _cells(family):
        end = table.moves.get((state, role, table.kind(frame)))
        sender = _at(family, role, state, frame)
        if end is None or end is REPEAT:
            with pytest.raises(LocalProtocolError) as info:
                sender.send(frame)
            assert info.value.reason is Reason.FRAME_UNEXPECTED
        else:
            data = sender.send(frame)
            assert sender.state is end, (state, role, frame)
        if not family.receivable or table.kind(frame) not in _vocabulary(table, role):
            continue  # not a frame this role's codec knows: it never reaches the wire
        receiver = _at(family, table.peer(role), state, frame)
        wire = data if end not in (None, REPEAT) else _encoded(family, role, frame)
        receiver.receive_data(wire)
        if end is None:
            with pytest.raises(RemoteProtocolError) as refused:
                receiver.next_event()
            assert refused.value.reason is Reason.FRAME_UNEXPECTED
        elif end is REPEAT:
            assert receiver.next_event() is Need.DATA
            assert receiver.state is state
        else:
            assert receiver.next_event() == frame
            assert receiver.state is end


def _vocabulary(table: Table, role: Any) -> set[Any]:
    """Every kind ``role`` says in some state of ``table``."""
    return {kind for _state, said_by, kind in table.moves if said_by == role}


def _encoded(family: Family, role: Any, frame: Any) -> bytes:
    """``frame``'s bytes as ``role`` would send them, whatever the state."""
    end = family.end(role)
    encoded: bytes = end._encode(frame)
    return encoded


@pytest.mark.parametrize(
    "table", [cc.TABLE, wc.TABLE, fc.TABLE, gc.TABLE, pc.TABLE], ids=lambda t: repr(t.start)
)
def test_every_row_stays_within_its_table(table: Table) -> None:
    """Each row names the table's own two roles and states of the start's kind."""
    for (state, role, _kind), end in table.moves.items():
        assert role in table.roles
        assert isinstance(state, type(table.start))
        assert end is REPEAT or isinstance(end, type(table.start))


@pytest.mark.parametrize(
    ("table", "closes"),
    [
        (cc.TABLE, {cc.ControlState.CLOSED}),
        (gc.TABLE, {gc.GuardianState.SHUTTING_DOWN, gc.GuardianState.RELEASING}),
        (wc.TABLE, set()),
        (fc.TABLE, set()),
        (pc.TABLE, set()),
    ],
    ids=["control", "guardian", "worker", "fork-server", "proc-host"],
)
def test_what_the_close_stands_for(table: Table, closes: set[Any]) -> None:
    """The peer's close moves only the control channel (to CLOSED) and the guardian's end
    of its channel (the supervisor's loss: shutdown, then release)."""
    assert {end for (_s, _r, kind), end in table.moves.items() if kind is CLOSE} == closes


def test_the_engine_imports_no_frame_family() -> None:
    """The engine is generic: it imports the framing, the errors and the catalogue only."""
    tree = ast.parse(Path(engine.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert imported <= {
        "__future__",
        "collections.abc",
        "typing",
        "enum",
        "coretsia.worker_protocol.catalogue",
        "coretsia.worker_protocol.exceptions",
        "coretsia.worker_protocol.framing",
    }


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_worker_pair_always_agrees(data: st.DataObject) -> None:
    """Over any sequence of frames from either end, what one end may send the other reads
    (a repeat dropped), and both stand in the same state."""
    ends = {
        wc.Role.WORKER: wc.WorkerConversation(),
        wc.Role.SUPERVISOR: wc.SupervisorConversation(),
    }
    frames = FAMILIES[1].frames
    for role, frame in data.draw(
        st.lists(st.tuples(st.sampled_from(list(ends)), st.sampled_from(frames)), max_size=16)
    ):
        sender, receiver = ends[role], ends[wc.Role(wc.TABLE.peer(role))]
        try:
            sent = sender.send(frame)
        except LocalProtocolError:
            continue  # the worker's table keeps a refused send harmless
        receiver.receive_data(sent)
        assert receiver.next_event() == frame
        assert receiver.state is sender.state


@settings(max_examples=200, deadline=None)
@given(moves=st.lists(st.tuples(st.booleans(), st.sampled_from([b"1", b"2"])), max_size=16))
def test_a_fork_server_pair_always_agrees(moves: list[tuple[bool, bytes]]) -> None:
    """Pipelined requests by tag: each end judges every datagram alike."""
    guardian = fc.ForkServerConversation(fc.Role.GUARDIAN)
    server = fc.ForkServerConversation(fc.Role.FORK_SERVER)
    for ask, tag in moves:
        frame: Any = fc.Request(tag, ("x",)) if ask else fc.Done(tag)
        sender, receiver = (guardian, server) if ask else (server, guardian)
        try:
            sent = sender.send(frame)
        except LocalProtocolError:
            assert sender.in_flight(tag) is ask  # a tag in flight again, or none to answer
            return  # the refused end is broken from then on (the engine's rule 1)
        receiver.receive_data(sent)
        assert receiver.next_event() == frame
        assert guardian.in_flight(tag) is server.in_flight(tag)
