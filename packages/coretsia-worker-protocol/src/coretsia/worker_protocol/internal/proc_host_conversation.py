"""The proc-host channel's conversation, sans-IO: guardian and proc host. Internal.

:mod:`.proc_host` says what one frame may contain; this module says in what order frames
travel, for both ends: :class:`DriverEnd` (the guardian's ``proc`` driver, the opener)
and :class:`HostEnd` (the proc host, the answerer), run by :mod:`..conversation_engine`
(its rules 1 to 4 apply here too) with the rules the internal channels share
(:class:`~.guardian_conversation.InternalConversation`).

The moves (guardian ``->``, proc host ``<-``), all of them in :data:`TABLE`:

1. Handshake: ``-> host-hello``, then ``<- welcome`` or ``<- refused``; the only refusal
   is ``worker-peer-version-mismatch``.
2. Running: ``-> spawn`` (each answered by ``<- spawned`` or ``<- spawn-failed``) and
   ``-> signal`` any number of times; ``<- exited`` at any time.
3. ``-> quit`` once, last: the proc host reads nothing more. Answers and reports it sent
   before it read ``quit`` may still arrive.

The end of the guardian's stream is the guardian's death: the proc host kills what is
left and exits, saying nothing more. Imported only by a ``proc`` guardian and the proc
host: a ``fork`` guardian never loads it.
"""

from __future__ import annotations

import enum
from typing import Final

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import Table
from coretsia.worker_protocol.internal import guardian as g
from coretsia.worker_protocol.internal.guardian_conversation import InternalConversation, Role
from coretsia.worker_protocol.internal.proc_host import (
    HostHello,
    ProcHostFrame,
    Quit,
    Signal,
    decode_proc_host_frame,
    encode_proc_host_frame,
)


class HostState(enum.Enum):
    """Where a proc-host channel stands; each end keeps its own view."""

    HELLO = "hello"
    """The guardian's ``host-hello`` is next."""
    WELCOME = "welcome"
    """``host-hello`` went: the proc host's ``welcome`` (or ``refused``) is next."""
    RUNNING = "running"
    """Spawns, signals and their reports."""
    QUITTING = "quitting"
    """``quit`` went: only what the proc host said before it read it is still to come."""
    REFUSED = "refused"
    """``refused`` went: the proc host exits."""


_D, _H = Role.GUARDIAN, Role.PROC_HOST
_REPORTS: Final = (g.Spawned, g.SpawnFailed, g.Exited)
_St = HostState

TABLE: Final = Table(
    HostState.HELLO,
    (_D, _H),
    [
        (_St.HELLO, _D, (HostHello,), _St.WELCOME),
        (_St.WELCOME, _H, (g.Welcome,), _St.RUNNING),
        (_St.WELCOME, _H, (g.Refused,), _St.REFUSED),
        (_St.RUNNING, _D, (g.Spawn, Signal), _St.RUNNING),
        (_St.RUNNING, _D, (Quit,), _St.QUITTING),
        (_St.RUNNING, _H, _REPORTS, _St.RUNNING),
        (_St.QUITTING, _H, _REPORTS, _St.QUITTING),
    ],
)
"""Every legal move of the proc-host channel: ``(state, role, frame class) -> state``."""


class ProcHostConversation(InternalConversation):
    """One end of the proc-host channel, by its role."""

    __slots__ = ()

    REFUSALS = frozenset({Reason.PEER_VERSION_MISMATCH})
    HELLO = HostHello

    def _encode(self, frame: ProcHostFrame) -> bytes:
        return encode_proc_host_frame(frame)

    def _decode(self, data: bytes) -> ProcHostFrame:
        return decode_proc_host_frame(data)


class DriverEnd(ProcHostConversation):
    """The guardian's end: say ``host-hello``, then spawn, signal and quit."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(TABLE, Role.GUARDIAN)


class HostEnd(ProcHostConversation):
    """The proc host's end: check ``host-hello``, then serve and report."""

    __slots__ = ()

    def __init__(self, version: str) -> None:
        super().__init__(TABLE, Role.PROC_HOST, version)
