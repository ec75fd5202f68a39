"""Guardian-channel frames: supervisor and guardian. Internal; versioned by the handshake.

The conversation, in order (supervisor ``->``, guardian ``<-``; the rules themselves are
:mod:`.guardian_conversation`'s):

1. ``-> hello`` (package version, driver, containment level, the root's identity,
   shutdown budgets) and ``<- welcome`` with the guardian's version; either side
   refuses a peer of another version (``worker-peer-version-mismatch``) and the guardian
   exits.
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

from typing import ClassVar, Final

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.internal.runtime.exit_kind import ExitKind
from coretsia.worker_protocol.records import field
from coretsia.worker_protocol.vocabulary import Containment, Driver, ShutdownPhase

GUARDIAN_CHANNEL_VERSION: Final = 1

ROOT_ID_HEX_LEN: Final = 16
"""A root's identity: the first 64 bits of the SHA-256 of its real path, in hex."""

_REASON: Final = s.Choice(Reason)


class Hello(Frame, kw_only=True):
    """Supervisor to guardian: who I am and the budgets the guardian must enforce."""

    TAG: ClassVar[str] = "hello"
    peer_version: str = field(kind=s.TEXT)
    driver: Driver = field(kind=s.Choice(Driver))
    stop_timeout_ms: int = field(kind=s.ANY_INT)
    force_kill_timeout_ms: int = field(kind=s.ANY_INT)
    umask: int = field(kind=s.ANY_INT)
    """The operator's umask, restored in the guardian so workers create files as usual."""
    log_json: bool = field(kind=s.Bool())
    """Whether the guardian writes its log lines as JSON (the supervisor's choice)."""
    containment: Containment = field(kind=s.Choice(Containment))
    """The containment level the guardian sets up (resolved, so known to be available)."""
    root_id: str = field(kind=s.Hex(ROOT_ID_HEX_LEN))
    """The root's identity (a hash of its real path, not a secret): the mark that tells
    this root's processes and cgroups left behind from any other root's."""
    fork_server: tuple[str, ...] | None = field(default=None, kind=s.Omissible(s.Array(s.TEXT)))
    """``spawn = "forkserver"``: the argv of the generation's fork server, which the
    guardian starts once and asks for every worker (:mod:`.fork_server`); left out (None):
    every worker is a fresh interpreter of its own."""


class Welcome(Frame, kw_only=True):
    """Guardian to supervisor: the handshake is accepted."""

    TAG: ClassVar[str] = "welcome"
    peer_version: str = field(kind=s.TEXT)
    pid: int = field(kind=s.ANY_INT)


class Locked(Frame, kw_only=True):
    """Guardian to supervisor: the generation fence is held."""

    TAG: ClassVar[str] = "locked"


class Refused(Frame, kw_only=True):
    """Either way: the conversation cannot go on, for this catalogue reason."""

    TAG: ClassVar[str] = "refused"
    reason: Reason = field(kind=_REASON)


class Spawn(Frame, kw_only=True):
    """Supervisor to guardian: start one worker for ``slot`` with this shell-free argv."""

    TAG: ClassVar[str] = "spawn"
    slot: int = field(kind=s.ANY_INT)
    argv: tuple[str, ...] = field(kind=s.Array(s.TEXT))


class Spawned(Frame, kw_only=True):
    """Guardian to supervisor: the worker of ``slot`` runs as ``pid``."""

    TAG: ClassVar[str] = "spawned"
    slot: int = field(kind=s.ANY_INT)
    pid: int = field(kind=s.ANY_INT)


class SpawnFailed(Frame, kw_only=True):
    """Guardian to supervisor: the worker of ``slot`` could not be started."""

    TAG: ClassVar[str] = "spawn-failed"
    slot: int = field(kind=s.ANY_INT)
    reason: Reason = field(kind=_REASON)


class Exited(Frame, kw_only=True):
    """Guardian to supervisor: the worker of ``slot`` ended and was reaped.

    ``exit_kind`` is one :class:`ExitKind` (``exit-0``, ``exit-nonzero``,
    ``signal-term``, ``signal-kill``, ``signal-other``); any other value is a protocol
    violation. Raw statuses stay inside the guardian.
    """

    TAG: ClassVar[str] = "exited"
    slot: int = field(kind=s.ANY_INT)
    exit_kind: ExitKind = field(kind=s.Choice(ExitKind))


class HostStarted(Frame, kw_only=True):
    """Guardian to supervisor: a helper of the guardian runs as ``pid``: the proc host
    (driver ``proc``), or the init of the generation's PID namespace (``namespace``).

    The supervisor, a subreaper, inherits it if the guardian dies; a dead process's
    environment cannot be read, so the pid is how the sweep knows it for its own.
    """

    TAG: ClassVar[str] = "host-started"
    pid: int = field(kind=s.ANY_INT)


class GenerationFailed(Frame, kw_only=True):
    """Guardian to supervisor: the generation broke: fail the pool with ``reason``.

    The proc host died (``worker-process-host-failed``) or failed its handshake: of
    another version (``worker-peer-version-mismatch``) or for any other cause.
    """

    TAG: ClassVar[str] = "generation-failed"
    reason: Reason = field(kind=_REASON)


class Shutdown(Frame, kw_only=True):
    """Supervisor to guardian: run the bounded shutdown of the whole generation."""

    TAG: ClassVar[str] = "shutdown"


class Phase(Frame, kw_only=True):
    """Guardian to supervisor: shutdown entered ``phase``, with this budget."""

    TAG: ClassVar[str] = "phase"
    phase: ShutdownPhase = field(kind=s.Choice(ShutdownPhase))
    budget_ms: int = field(kind=s.ANY_INT)


class Drained(Frame, kw_only=True):
    """Guardian to supervisor: shutdown ended; ``clean`` false if a process survived."""

    TAG: ClassVar[str] = "drained"
    clean: bool = field(kind=s.Bool())


class Release(Frame, kw_only=True):
    """Supervisor to guardian: my files are gone, release the lock."""

    TAG: ClassVar[str] = "release"


class Released(Frame, kw_only=True):
    """Guardian to supervisor: the lock is free; the guardian exits next."""

    TAG: ClassVar[str] = "released"


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

_CODEC: Final = Codec(GUARDIAN_CHANNEL_VERSION, GuardianFrame.__args__)


def encode_guardian_frame(frame: GuardianFrame) -> bytes:
    """Encode one guardian-channel line."""
    return _CODEC.encode(frame)


def decode_guardian_frame(line: bytes) -> GuardianFrame:
    """Decode one guardian-channel line; anything off is a RemoteProtocolError."""
    frame: GuardianFrame = _CODEC.decode(line)
    return frame
