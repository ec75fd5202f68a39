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
* ``retiring``: ``max_requests`` reached; the worker asks to retire and keeps serving
  until the supervisor answers ``retire`` (one slot recycles at a time, so capacity never
  drops by more than one), then exits cleanly and the slot is recycled.
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


class Retiring(Frozen):
    """The worker reached ``max_requests`` and will exit cleanly to be replaced."""

    __slots__ = ()
    __match_args__ = ()


class ShutdownRequest(Frozen):
    """The worker asks for the whole pool to shut down."""

    __slots__ = ()
    __match_args__ = ()


WorkerFrame = Ready | Failed | Retiring | ShutdownRequest


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
    elif isinstance(frame, Retiring):
        obj.update(type="retiring")
    else:
        obj.update(type="shutdown-request")
    return s.encode_checked(obj, _read)


def decode_worker_frame(line: bytes) -> WorkerFrame:
    """Decode one frame line; anything off is a :class:`RemoteProtocolError`."""
    return s.decode_checked(line, _read, MAX_FRAME_BYTES)
