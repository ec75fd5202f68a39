"""Proc-host-channel frames: guardian and proc host. Internal; versioned by the handshake.

The proc host owns worker process handles on the guardian's behalf (the portable
``proc`` driver). The conversation (guardian ``->``, proc host ``<-``):

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
from typing import ClassVar, Final, Literal

import attrs

from coretsia.worker_protocol.internal import _converter as c
from coretsia.worker_protocol.internal.guardian import (
    Exited,
    Refused,
    Spawn,
    Spawned,
    SpawnFailed,
    Welcome,
)

PROC_HOST_CHANNEL_VERSION: Final = 1


class SignalName(str, enum.Enum):
    """The only two signals the guardian ever asks the proc host to deliver."""

    TERM = "term"
    KILL = "kill"


@attrs.frozen(kw_only=True)
class HostHello:
    """Guardian to proc host: my version; the host answers ``welcome`` or ``refused``."""

    TAG: ClassVar[str] = "host-hello"
    version: Literal[1] = 1
    peer_version: str


@attrs.frozen(kw_only=True)
class Signal:
    """Guardian to proc host: deliver ``signal`` to the worker of ``slot``."""

    TAG: ClassVar[str] = "signal"
    version: Literal[1] = 1
    slot: int
    signal: SignalName


@attrs.frozen(kw_only=True)
class Quit:
    """Guardian to proc host: kill and reap what is left, then exit."""

    TAG: ClassVar[str] = "quit"
    version: Literal[1] = 1


ProcHostFrame = (
    HostHello | Welcome | Refused | Spawn | Spawned | SpawnFailed | Exited | Signal | Quit
)

_CONVERTER: Final = c.make_strict_converter()
c.tagged_union(_CONVERTER, ProcHostFrame)


def encode_proc_host_frame(frame: ProcHostFrame) -> bytes:
    """Encode one proc-host-channel line."""
    return c.encode(_CONVERTER, ProcHostFrame, frame)


def decode_proc_host_frame(line: bytes) -> ProcHostFrame:
    """Decode one proc-host-channel line; anything off is a RemoteProtocolError."""
    frame: ProcHostFrame = c.decode(_CONVERTER, ProcHostFrame, line, PROC_HOST_CHANNEL_VERSION)
    return frame
