"""Worker-channel frames v1: what a worker's launcher tells its supervisor. Internal.

Internal frames carry no stability promise: they change with the handshake version and
are not a plugin boundary (seed 000, "Internal seams"). They live here so that both ends
share one definition, and they use the hand-written codec because the launcher encodes
them on the worker boot path, which must not import cattrs.

On POSIX the channel is a descriptor the worker inherits, so the channel itself proves
who is speaking and ``token`` is ``null``; where descriptors cannot be passed, the worker
connects to a loopback port and the first frame must carry its per-spawn token.

Frames, in the order a worker may send them:

* ``ready``: booted, task source resolved, ``assert_ready`` passed. Exactly once.
* ``failed``: a terminal reason token, sent before a non-zero exit, so the operator sees
  why a worker died (before or after readiness).
* ``task-failed``: a unit of work failed and was settled with ``fail``; safe fields only
  (the attempt number and whether the source will retry it, when the source says, and
  the exception's class name: never its message, never the payload), so the supervisor
  can log it. Any number of times.
* ``retiring``: ``max_requests`` reached; the worker asks to retire, may take one more
  task while the request travels, then takes none until the supervisor answers
  ``retire`` (one slot recycles at a time), exits cleanly and the slot is recycled: at
  most ``max_requests + 1`` attempts per worker process.
* ``shutdown-request``: the worker asks for the whole pool to stop (seed 003's
  ``pool.shutdown()``).
"""

from __future__ import annotations

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._frozen import Frozen
from coretsia.worker_protocol.catalogue import REASON_CODES, ErrorCode, Reason
from coretsia.worker_protocol.framing import MAX_FRAME_BYTES
from coretsia.worker_protocol.vocabulary import TOKEN_HEX_LEN

# Not ``from typing import ...``: this module is on every worker's boot path, where
# importing typing costs milliseconds; type checkers honour a module-level TYPE_CHECKING.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

WORKER_CHANNEL_VERSION: Final = 1
"""The version every worker-channel frame carries."""

_WORKER_CODES: Final = frozenset({ErrorCode.START_FAILED, ErrorCode.LIFECYCLE_FAILED})


class Ready(Frozen):
    """The worker is ready; ``token`` is its per-spawn token where the channel needs one."""

    __slots__ = ("_token",)
    __match_args__ = ("token",)
    _fields = ("token",)
    _shown = ()  # the token never reaches a repr
    _token: str | None

    def __init__(self, token: str | None = None) -> None:
        self._set(token)

    @property
    def token(self) -> str | None:
        return self._token


class Failed(Frozen):
    """The worker is about to exit non-zero for this reason."""

    __slots__ = ("_reason",)
    __match_args__ = ("reason",)
    _fields = _shown = ("reason",)
    _reason: Reason

    def __init__(self, reason: Reason) -> None:
        self._set(reason)

    @property
    def reason(self) -> Reason:
        return self._reason


class TaskFailed(Frozen):
    """A unit of work failed; what an operator may see of it (see the module docstring).

    ``attempt`` counts from 1 and ``retried`` says whether the source will run the task
    again; either is None when the source does not tell. ``error_type`` is a class name
    (dotted identifiers only, see :func:`error_type_name`).
    """

    __slots__ = ("_attempt", "_error_type", "_retried")
    __match_args__ = ("error_type", "attempt", "retried")
    _fields = _shown = ("error_type", "attempt", "retried")
    _error_type: str
    _attempt: int | None
    _retried: bool | None

    def __init__(
        self, error_type: str, attempt: int | None = None, retried: bool | None = None
    ) -> None:
        self._set(error_type, attempt, retried)

    @property
    def error_type(self) -> str:
        return self._error_type

    @property
    def attempt(self) -> int | None:
        return self._attempt

    @property
    def retried(self) -> bool | None:
        return self._retried


MAX_ERROR_TYPE_LEN: Final = 128
"""The longest class name a ``task-failed`` frame carries."""
MAX_ATTEMPT: Final = 2**31 - 1


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


class Retiring(Frozen):
    """The worker reached ``max_requests`` and will exit cleanly to be replaced."""

    __slots__ = ()
    __match_args__ = ()


class ShutdownRequest(Frozen):
    """The worker asks for the whole pool to shut down."""

    __slots__ = ()
    __match_args__ = ()


WorkerFrame = Ready | Failed | TaskFailed | Retiring | ShutdownRequest


class Retire(Frozen):
    """Supervisor to worker: your turn to retire; exit cleanly after the current task."""

    __slots__ = ()
    __match_args__ = ()


def encode_retire() -> bytes:
    """The one frame the supervisor sends a worker."""
    return s.dumps({"type": "retire", "version": WORKER_CHANNEL_VERSION}) + b"\n"


def decode_supervisor_frame(line: bytes) -> Retire:
    """Decode a frame from the supervisor; anything off is a RemoteProtocolError."""
    return s.decode_checked(line, _read_supervisor, MAX_FRAME_BYTES)


def _read_supervisor(obj: s.JsonObject) -> Retire:
    s.check_version(obj, WORKER_CHANNEL_VERSION)
    if s.get_type(obj) != "retire":
        raise s.FieldError(Reason.FRAME_UNKNOWN_TYPE, "$.type")
    s.check_keys(obj, _BASE)
    return Retire()


_BASE: Final = frozenset({"version", "type"})


def _read(obj: s.JsonObject) -> WorkerFrame:
    s.check_version(obj, WORKER_CHANNEL_VERSION)
    kind = s.get_type(obj)
    if kind == "ready":
        s.check_keys(obj, _BASE | {"token"})
        if obj["token"] is None:
            return Ready()
        return Ready(s.get_hex(obj, "token", TOKEN_HEX_LEN))
    if kind == "failed":
        s.check_keys(obj, _BASE | {"reason"})
        reason = s.get_enum(obj, "reason", Reason)
        if REASON_CODES[reason] not in _WORKER_CODES:
            raise s.FieldError(Reason.FRAME_INVALID_VALUE, "$.reason")
        return Failed(reason)
    if kind == "task-failed":
        s.check_keys(obj, _BASE | {"error_type", "attempt", "retried"})
        error_type = s.get_str(obj, "error_type", MAX_ERROR_TYPE_LEN)
        if not _is_type_name(error_type):
            raise s.FieldError(Reason.FRAME_INVALID_VALUE, "$.error_type")
        attempt = None if obj["attempt"] is None else s.get_int(obj, "attempt", 1, MAX_ATTEMPT)
        retried = None if obj["retried"] is None else s.get_bool(obj, "retried")
        return TaskFailed(error_type, attempt, retried)
    if kind == "retiring":
        s.check_keys(obj, _BASE)
        return Retiring()
    if kind == "shutdown-request":
        s.check_keys(obj, _BASE)
        return ShutdownRequest()
    raise s.FieldError(Reason.FRAME_UNKNOWN_TYPE, "$.type")


def encode_worker_frame(frame: WorkerFrame) -> bytes:
    """Encode one frame line, checked by the supervisor's own rules."""
    obj: s.JsonObject = {"version": WORKER_CHANNEL_VERSION}
    if isinstance(frame, Ready):
        obj.update(type="ready", token=frame.token)
    elif isinstance(frame, Failed):
        obj.update(type="failed", reason=frame.reason.value)
    elif isinstance(frame, TaskFailed):
        obj.update(
            type="task-failed",
            error_type=frame.error_type,
            attempt=frame.attempt,
            retried=frame.retried,
        )
    elif isinstance(frame, Retiring):
        obj.update(type="retiring")
    else:
        obj.update(type="shutdown-request")
    return s.encode_checked(obj, _read)


def decode_worker_frame(line: bytes) -> WorkerFrame:
    """Decode one frame line; anything off is a :class:`RemoteProtocolError`."""
    return s.decode_checked(line, _read, MAX_FRAME_BYTES)
