"""Worker-channel frames v1: what a worker's launcher tells its supervisor. Internal.

Internal frames carry no stability promise: they change with the handshake version and
are not a plugin boundary (seed 000, "Internal seams"). They live here so that both ends
share one definition; the launcher encodes them on the worker boot path, which the
protocol's light records and codec (:mod:`.records`, :mod:`._codec`) keep fast.

On POSIX the channel is a descriptor the worker inherits, so the channel itself proves
who is speaking and ``token`` is ``null``; where descriptors cannot be passed, the worker
connects to a loopback port and the first frame must carry its per-spawn token.

Frames, in the order a worker may send them:

* ``ready``: booted, task source resolved, ``assert_ready`` passed. Exactly once.
* ``failed``: a terminal reason token, sent before a non-zero exit, so the operator sees
  why a worker died (before or after readiness); with a task source's ``fault`` when a
  source that cannot reach its backend is why.
* ``task-failed``: a unit of work failed and was settled with ``fail``; safe fields only
  (the attempt number and whether the source will retry it, when the source says, and
  the exception's class name: never its message, never the payload), so the supervisor
  can log it. Any number of times.
* ``retiring``: ``max_requests`` reached; the worker asks to retire, may take one more
  task while the request travels, then takes none until the supervisor answers
  ``retire`` (one slot recycles at a time), exits cleanly and the slot is recycled: at
  most ``max_requests + 1`` attempts per worker process. Its ``cause`` says why
  (:class:`RecycleCause`): with ``max-memory`` (its resident memory passed
  ``max_memory_mb``) the worker takes no other task while it waits.
* ``shutdown-request``: the worker asks for the whole pool to stop (seed 003's
  ``pool.shutdown()``).
* ``source-unavailable``: the task source lost its backend and is reconnecting (the
  ``fault`` says which way); ``source-available``: it is back. After ``ready``, any number
  of times: ``health`` fails with ``worker-task-source-unavailable`` in between.
* ``task-lease-lost``: after an outage, a task's settlement found its lease taken back;
  the task is not settled again (the supervisor logs ``task.lease_lost``). Any time.
* ``heartbeat``: the worker is alive and scheduled; sent after ``ready`` every third of
  ``heartbeat_timeout_ms`` when the generation asks for it, whatever the worker is doing
  (waiting for work or running a task). Carries nothing: its arrival is the news.
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Codec, Frame
from coretsia.worker_protocol.catalogue import REASON_CODES, ErrorCode, Reason, SourceFault
from coretsia.worker_protocol.records import field
from coretsia.worker_protocol.vocabulary import TOKEN_HEX_LEN

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import ClassVar, Final

WORKER_CHANNEL_VERSION: Final = 1
"""The version every worker-channel frame carries."""

_WORKER_CODES: Final = frozenset(
    {ErrorCode.START_FAILED, ErrorCode.LIFECYCLE_FAILED, ErrorCode.RUNTIME_ENTRYPOINT_FAILED}
)
"""What a ``failed`` frame may say: a boot or run failure, or the boot's entrypoint guard."""

MAX_ERROR_TYPE_LEN: Final = 128
"""The longest class name a ``task-failed`` frame carries."""
MAX_ATTEMPT: Final = 2**31 - 1


class Ready(Frame):
    """The worker is ready; ``token`` is its per-spawn token where the channel needs one."""

    TAG: ClassVar[str] = "ready"
    token: str | None = field(default=None, secret=True, kind=s.Nullable(s.Hex(TOKEN_HEX_LEN)))


class Failed(Frame):
    """The worker is about to exit non-zero for this reason."""

    TAG: ClassVar[str] = "failed"
    reason: Reason = field(kind=s.Choice(Reason))
    fault: SourceFault | None = field(default=None, kind=s.Omissible(s.Choice(SourceFault)))
    """Why the task source could not reach its backend, when that is the failure."""

    def _check(self) -> None:
        s.require(REASON_CODES[self.reason] in _WORKER_CODES, "reason")


class TaskFailed(Frame):
    """A unit of work failed; what an operator may see of it (see the module docstring).

    ``attempt`` counts from 1 and ``retried`` says whether the source will run the task
    again; either is None when the source does not tell. ``error_type`` is a class name
    (dotted identifiers only, see :func:`error_type_name`).
    """

    TAG: ClassVar[str] = "task-failed"
    error_type: str = field(kind=s.Str(MAX_ERROR_TYPE_LEN))
    attempt: int | None = field(default=None, kind=s.Nullable(s.Int(1, MAX_ATTEMPT)))
    retried: bool | None = field(default=None, kind=s.Nullable(s.Bool()))

    def _check(self) -> None:
        s.require(_is_type_name(self.error_type), "error_type")


def error_type_name(kind: type) -> str:
    """``kind``'s qualified name (or its bare name) made of identifiers, else ``Exception``.

    A class name is code, not data, which is why it may be logged; a class built at run
    time can have any name at all, so only a name made of identifiers passes (a class
    defined in a function, ``f.<locals>.Error``, is logged as ``Error``).
    """
    for attribute in ("__qualname__", "__name__"):
        name = getattr(kind, attribute, "")
        if isinstance(name, str) and _is_type_name(name):
            return name
    return "Exception"


def _is_type_name(name: str) -> bool:
    return (
        0 < len(name) <= MAX_ERROR_TYPE_LEN
        and name.isascii()
        and all(part.isidentifier() for part in name.split("."))
    )


class RecycleCause(str, enum.Enum):
    """Why a worker asks to retire: what ``worker.retired`` and the recycle counts say."""

    MAX_REQUESTS = "max-requests"
    MAX_MEMORY = "max-memory"


class Retiring(Frame):
    """The worker reached ``max_requests`` (or ``max_memory_mb``) and will exit cleanly
    to be replaced."""

    TAG: ClassVar[str] = "retiring"
    cause: RecycleCause = field(default=RecycleCause.MAX_REQUESTS, kind=s.Choice(RecycleCause))


class ShutdownRequest(Frame):
    """The worker asks for the whole pool to shut down."""

    TAG: ClassVar[str] = "shutdown-request"


class Heartbeat(Frame):
    """The worker still runs: sent at an interval after ``ready``, never before."""

    TAG: ClassVar[str] = "heartbeat"


class SourceUnavailable(Frame):
    """The task source lost its backend (``fault``: which way) and is reconnecting."""

    TAG: ClassVar[str] = "source-unavailable"
    fault: SourceFault = field(kind=s.Choice(SourceFault))


class SourceAvailable(Frame):
    """The task source is back after ``source-unavailable``."""

    TAG: ClassVar[str] = "source-available"


class TaskLeaseLost(Frame):
    """After an outage, a task's settlement found its lease taken back (not settled again)."""

    TAG: ClassVar[str] = "task-lease-lost"


WorkerFrame = (
    Ready
    | Failed
    | TaskFailed
    | Retiring
    | ShutdownRequest
    | Heartbeat
    | SourceUnavailable
    | SourceAvailable
    | TaskLeaseLost
)


class Retire(Frame):
    """Supervisor to worker: your turn to retire; exit cleanly after the current task."""

    TAG: ClassVar[str] = "retire"


_WORKER: Final = Codec(WORKER_CHANNEL_VERSION, WorkerFrame.__args__)
_SUPERVISOR: Final = Codec(WORKER_CHANNEL_VERSION, (Retire,))


def encode_retire() -> bytes:
    """The one frame the supervisor sends a worker."""
    return _SUPERVISOR.encode(Retire())


def decode_supervisor_frame(line: bytes) -> Retire:
    """Decode a frame from the supervisor; anything off is a RemoteProtocolError."""
    frame: Retire = _SUPERVISOR.decode(line)
    return frame


def encode_worker_frame(frame: WorkerFrame) -> bytes:
    """Encode one frame line, checked by the supervisor's own rules."""
    return _WORKER.encode(frame)


def decode_worker_frame(line: bytes) -> WorkerFrame:
    """Decode one frame line; anything off is a :class:`RemoteProtocolError`."""
    frame: WorkerFrame = _WORKER.decode(line)
    return frame
