"""Guardian-channel frames: supervisor and guardian. Internal; versioned by the handshake.

The conversation, in order (supervisor ``->``, guardian ``<-``):

1. ``-> hello`` (package version, driver, shutdown budgets) and ``<- welcome`` with the
   guardian's version; either side refuses a peer of another version
   (``worker-peer-version-mismatch``) and the guardian exits.
2. ``<- locked`` once the guardian holds ``var/tmp/worker.lock``, or ``<- refused`` with
   ``worker-already-running``; only after ``locked`` may the supervisor touch any file.
3. ``-> spawn`` per slot, answered by ``<- spawned`` (the pid, for the guardian's own
   bookkeeping and logs) or ``<- spawn-failed``; ``<- exited`` when a worker ends.
4. ``-> shutdown`` once; the guardian runs every phase with the budgets of ``hello``,
   reports ``<- phase`` as it enters each, then ``<- drained`` when no process of the
   generation is left (or, ``clean`` false, when one survived even SIGKILL).
5. The supervisor removes its own files (state, socket, locator), then ``-> release``;
   the guardian releases the lock last and answers ``<- released``. If the supervisor's
   end of the channel closes at any point, the guardian runs the same shutdown on its own
   and releases the lock when the generation is gone.
"""

from __future__ import annotations

from typing import ClassVar, Final, Literal

import attrs

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.internal import _converter as c
from coretsia.worker_protocol.vocabulary import Driver, ShutdownPhase

GUARDIAN_CHANNEL_VERSION: Final = 1


@attrs.frozen(kw_only=True)
class Hello:
    """Supervisor to guardian: who I am and the budgets the guardian must enforce."""

    TAG: ClassVar[str] = "hello"
    version: Literal[1] = 1
    peer_version: str
    driver: Driver
    stop_timeout_ms: int
    force_kill_timeout_ms: int
    umask: int
    """The operator's umask, restored in the guardian so workers create files as usual."""
    log_json: bool
    """Whether the guardian writes its log lines as JSON (the supervisor's choice)."""


@attrs.frozen(kw_only=True)
class Welcome:
    """Guardian to supervisor: the handshake is accepted."""

    TAG: ClassVar[str] = "welcome"
    version: Literal[1] = 1
    peer_version: str
    pid: int


@attrs.frozen(kw_only=True)
class Locked:
    """Guardian to supervisor: the generation fence is held."""

    TAG: ClassVar[str] = "locked"
    version: Literal[1] = 1


@attrs.frozen(kw_only=True)
class Refused:
    """Either way: the conversation cannot go on, for this catalogue reason."""

    TAG: ClassVar[str] = "refused"
    version: Literal[1] = 1
    reason: Reason


@attrs.frozen(kw_only=True)
class Spawn:
    """Supervisor to guardian: start one worker for ``slot`` with this shell-free argv."""

    TAG: ClassVar[str] = "spawn"
    version: Literal[1] = 1
    slot: int
    argv: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Spawned:
    """Guardian to supervisor: the worker of ``slot`` runs as ``pid``."""

    TAG: ClassVar[str] = "spawned"
    version: Literal[1] = 1
    slot: int
    pid: int


@attrs.frozen(kw_only=True)
class SpawnFailed:
    """Guardian to supervisor: the worker of ``slot`` could not be started."""

    TAG: ClassVar[str] = "spawn-failed"
    version: Literal[1] = 1
    slot: int
    reason: Reason


@attrs.frozen(kw_only=True)
class Exited:
    """Guardian to supervisor: the worker of ``slot`` ended and was reaped.

    ``exit_kind`` is a bounded token (``exit-0``, ``exit-nonzero``, ``signal-term``,
    ``signal-kill``, ``signal-other``); raw statuses stay inside the guardian.
    """

    TAG: ClassVar[str] = "exited"
    version: Literal[1] = 1
    slot: int
    exit_kind: str


@attrs.frozen(kw_only=True)
class HostStarted:
    """Guardian to supervisor: the proc host runs as ``pid`` (driver ``proc`` only).

    The supervisor, a subreaper, inherits it if the guardian dies; a dead process's
    environment cannot be read, so the pid is how the sweep knows it for its own.
    """

    TAG: ClassVar[str] = "host-started"
    version: Literal[1] = 1
    pid: int


@attrs.frozen(kw_only=True)
class GenerationFailed:
    """Guardian to supervisor: the generation broke: fail the pool with ``reason``.

    The proc host died (``worker-process-host-failed``) or failed its handshake: of
    another version (``worker-peer-version-mismatch``) or for any other cause.
    """

    TAG: ClassVar[str] = "generation-failed"
    version: Literal[1] = 1
    reason: Reason


@attrs.frozen(kw_only=True)
class Shutdown:
    """Supervisor to guardian: run the bounded shutdown of the whole generation."""

    TAG: ClassVar[str] = "shutdown"
    version: Literal[1] = 1


@attrs.frozen(kw_only=True)
class Phase:
    """Guardian to supervisor: shutdown entered ``phase``, with this budget."""

    TAG: ClassVar[str] = "phase"
    version: Literal[1] = 1
    phase: ShutdownPhase
    budget_ms: int


@attrs.frozen(kw_only=True)
class Drained:
    """Guardian to supervisor: shutdown ended; ``clean`` false if a process survived."""

    TAG: ClassVar[str] = "drained"
    version: Literal[1] = 1
    clean: bool


@attrs.frozen(kw_only=True)
class Release:
    """Supervisor to guardian: my files are gone, release the lock."""

    TAG: ClassVar[str] = "release"
    version: Literal[1] = 1


@attrs.frozen(kw_only=True)
class Released:
    """Guardian to supervisor: the lock is free; the guardian exits next."""

    TAG: ClassVar[str] = "released"
    version: Literal[1] = 1


GuardianFrame = (
    Hello
    | Welcome
    | Locked
    | Refused
    | Spawn
    | Spawned
    | SpawnFailed
    | Exited
    | HostStarted
    | GenerationFailed
    | Shutdown
    | Phase
    | Drained
    | Release
    | Released
)

_CONVERTER: Final = c.make_strict_converter()
c.tagged_union(_CONVERTER, GuardianFrame)


def encode_guardian_frame(frame: GuardianFrame) -> bytes:
    """Encode one guardian-channel line."""
    return c.encode(_CONVERTER, GuardianFrame, frame)


def decode_guardian_frame(line: bytes) -> GuardianFrame:
    """Decode one guardian-channel line; anything off is a RemoteProtocolError."""
    frame: GuardianFrame = c.decode(_CONVERTER, GuardianFrame, line, GUARDIAN_CHANNEL_VERSION)
    return frame
