"""Proc-host-channel frames: guardian and proc host. Internal; versioned by the handshake.

The proc host owns worker process handles on the guardian's behalf (the portable
``proc`` driver). The conversation (guardian ``->``, proc host ``<-``; the rules
themselves are :mod:`.proc_host_conversation`'s):

1. ``-> host-hello`` with the guardian's version, ``<- welcome`` or ``<- refused``
   (``worker-peer-version-mismatch``).
2. ``-> spawn`` / ``<- spawned`` or ``<- spawn-failed``; ``<- exited`` when a worker ends.
3. ``-> signal`` delivers ``term`` or ``kill`` to one slot's worker (and its group).
4. ``-> quit``: the proc host kills whatever is left, reaps it and exits. If the
   guardian's end closes, the proc host does the same on its own.

``welcome``, ``refused``, ``spawn``, ``spawned``, ``spawn-failed`` and ``exited`` are the
guardian channel's classes: one definition, two conversations.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Final

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame
from coretsia.worker_protocol.internal.guardian import (
    Exited,
    Refused,
    Spawn,
    Spawned,
    SpawnFailed,
    Welcome,
)
from coretsia.worker_protocol.records import field

PROC_HOST_CHANNEL_VERSION: Final = 1


class SignalName(str, enum.Enum):
    """The only two signals the guardian ever asks the proc host to deliver."""

    TERM = "term"
    KILL = "kill"


class HostHello(Frame, kw_only=True):
    """Guardian to proc host: my version; the host answers ``welcome`` or ``refused``."""

    TAG: ClassVar[str] = "host-hello"
    peer_version: str = field(kind=s.TEXT)


class Signal(Frame, kw_only=True):
    """Guardian to proc host: deliver ``signal`` to the worker of ``slot``."""

    TAG: ClassVar[str] = "signal"
    slot: int = field(kind=s.ANY_INT)
    signal: SignalName = field(kind=s.Choice(SignalName))


class Quit(Frame, kw_only=True):
    """Guardian to proc host: kill and reap what is left, then exit."""

    TAG: ClassVar[str] = "quit"


ProcHostFrame = (
    HostHello | Welcome | Refused | Spawn | Spawned | SpawnFailed | Exited | Signal | Quit
)

_CODEC: Final = Codec(PROC_HOST_CHANNEL_VERSION, ProcHostFrame.__args__)


def encode_proc_host_frame(frame: ProcHostFrame) -> bytes:
    """Encode one proc-host-channel line."""
    return _CODEC.encode(frame)


def decode_proc_host_frame(line: bytes) -> ProcHostFrame:
    """Decode one proc-host-channel line; anything off is a RemoteProtocolError."""
    frame: ProcHostFrame = _CODEC.decode(line)
    return frame
