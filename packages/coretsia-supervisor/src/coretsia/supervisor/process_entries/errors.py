"""The failures of process entries (seed 003's ``ProcessException``): registration, messages.

Every failure is a :class:`ProcessError` whose message is a short fixed sentence written
here, never a value the caller passed: a name, a target or an argument can hold a path, a
host or a pasted secret, and exceptions end up in logs (the architecture's redaction
rule). The one exception is the entry name, which helps a developer find the faulty
registration: it is appended only when it is a short identifier-like string
(letters, digits, ``_``, ``.``, ``:``, ``-``), and silently left out otherwise.

Each concrete class also subclasses the closest stdlib type, so an existing
``except ValueError`` or ``except LookupError`` keeps working. This module imports
nothing: it is reachable from a worker's boot path.
"""

from __future__ import annotations

__all__ = [
    "AsyncMismatchError",
    "DuplicateProcessNameError",
    "HostLoopUnsupportedError",
    "InvalidProcessNameError",
    "IpcUnavailableError",
    "MessageBufferFullError",
    "MessageTooLargeError",
    "NestedPoolError",
    "PeerUnavailableError",
    "PoolAlreadyRunningError",
    "ProcessArgumentError",
    "ProcessError",
    "ProcessLimitExceededError",
    "ProcessNotFoundError",
    "ProcessSnapshotError",
    "ProcessTargetError",
    "RegistrationClosedError",
    "safe_name",
]

_MAX_SAFE_NAME = 128
_SAFE_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SAFE_CHARS = _SAFE_FIRST | frozenset(".:-")


def safe_name(name: object) -> str | None:
    """``name`` if it may appear in a message, else ``None``.

    Only plain ASCII identifier-like strings of at most 128 characters qualify: no spaces,
    slashes, quotes or control characters, so a path, a URL or a credential-looking
    string never reaches a message.
    """
    if (
        type(name) is str
        and 0 < len(name) <= _MAX_SAFE_NAME
        and name[0] in _SAFE_FIRST
        and all(c in _SAFE_CHARS for c in name)
    ):
        return name
    return None


class ProcessError(Exception):
    """Base of every process-manager failure; the message is a fixed sentence.

    ``code`` is the class's stable token (``process-...``), for a program that reports or
    matches failures without relying on the sentence. ``reason`` must be a literal
    sentence from this package, never text built from a caller's value; ``name`` is kept
    (and shown) only if :func:`safe_name` accepts it.
    """

    code = "process-error"
    default_reason = "the process registration failed"

    def __init__(self, reason: str | None = None, name: object = None) -> None:
        self.reason: str = self.default_reason if reason is None else reason
        self.name: str | None = safe_name(name)
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.name is None:
            return self.reason
        return f"{self.reason}: {self.name}"

    def __reduce__(self) -> tuple[type[ProcessError], tuple[str, str | None]]:
        return (type(self), (self.reason, self.name))


class InvalidProcessNameError(ProcessError, ValueError):
    """Raised when a name is not a non-empty string (or cannot be stored as UTF-8)."""

    code = "process-name-invalid"
    default_reason = "a process name must be a non-empty string"


class DuplicateProcessNameError(ProcessError, ValueError):
    """Raised when a registration would reuse a name; names are unique, case-sensitive."""

    code = "process-name-duplicate"
    default_reason = "a process with this name is already registered"


class ProcessLimitExceededError(ProcessError, ValueError):
    """Raised when a registration would take the pool past 1,024 workers in total."""

    code = "process-limit-exceeded"
    default_reason = "a pool holds at most 1024 workers in total"


class RegistrationClosedError(ProcessError, RuntimeError):
    """Raised on registration or a setting change after the first start attempt."""

    code = "process-registration-closed"
    default_reason = "registration and settings are closed once start has been attempted"


class NestedPoolError(ProcessError, RuntimeError):
    """Raised by ``start`` inside a managed worker: a worker never runs a pool of its own.

    Seed 003 rejects a second pool created from a managed worker; here it would also be
    a supervisor below a guardian's worker, outside every fence and budget.
    """

    code = "process-pool-nested"
    default_reason = "a process pool cannot be started inside a managed worker"


class PoolAlreadyRunningError(ProcessError, RuntimeError):
    """Raised by ``start`` or ``running`` while another pool runs in this process.

    A pool takes process-wide settings for its whole run (the umask, the ``coretsia``
    logger, the child-subreaper role), which two pools would fight over; and a second
    pool is what a pool's own guardian, workers and budgets exist to make unnecessary.
    """

    code = "process-pool-already-running"
    default_reason = "another process pool is already running in this process"


class HostLoopUnsupportedError(ProcessError, RuntimeError):
    """Raised by ``running`` outside a running asyncio or trio event loop.

    The mounted pool waits for its readiness and its end through the host's own loop;
    it knows those two (another library would need an adapter of its own).
    """

    code = "process-host-loop-unsupported"
    default_reason = "a mounted pool needs a running asyncio or trio event loop"


class ProcessTargetError(ProcessError, TypeError):
    """Raised when an entry is not a usable task or cannot be re-created in a worker.

    Every worker is a fresh interpreter that imports the entry again by
    ``module:qualname``, so anything without such an address (a lambda, a closure, a
    bound method of an instance, an instance whose class needs arguments) is refused.
    """

    code = "process-target-invalid"
    default_reason = "the entry cannot be re-created in a worker"


class AsyncMismatchError(ProcessError, TypeError):
    """Raised when the effective async flag contradicts the entry's shape.

    In Python the flag is not a preference: an ``async def`` entry can only run in an
    event loop and a plain one only outside it, so a contradiction is refused at
    registration rather than failing in every worker.
    """

    code = "process-async-mismatch"
    default_reason = "the effective async flag contradicts the entry's execute"


class ProcessArgumentError(ProcessError, ValueError):
    """Raised when an argument breaks a rule: worker count, a flag, an IPC setting."""

    code = "process-argument-invalid"
    default_reason = "an argument of the process manager is invalid"


class ProcessSnapshotError(ProcessError, ValueError):
    """Raised when a frozen description of the entries is not a valid current one."""

    code = "process-snapshot-invalid"
    default_reason = "the process snapshot is invalid"


class ProcessNotFoundError(ProcessError, LookupError):
    """Raised by :meth:`ProcessManager.get` for a name that is not registered."""

    code = "process-not-found"
    default_reason = "no process is registered under this name"


# -- the worker-side message API (``pool.send_message`` / ``receive_message``) ----------


class IpcUnavailableError(ProcessError, RuntimeError):
    """Raised by the message API of a pool whose ``ipc_type`` is ``none``.

    Messages need an endpoint the supervisor prepared for the whole pool at start, so a
    pool without one cannot grow it later: choose ``unixsock`` or ``msgqueue`` first.
    """

    code = "process-ipc-unavailable"
    default_reason = "this pool has no message IPC: set ipc_type to unixsock or msgqueue"


class MessageTooLargeError(ProcessError, ValueError):
    """Raised when a message is larger than the one size every IPC mode can carry."""

    code = "process-message-too-large"
    default_reason = "a pool message is at most 8192 bytes"


class PeerUnavailableError(ProcessError, ConnectionError):
    """Raised when the receiving worker has no message endpoint at the moment.

    In ``unixsock`` mode a worker that is starting, being replaced or gone cannot
    receive; the message is not sent and the caller decides whether to try again.
    """

    code = "process-peer-unavailable"
    default_reason = "the receiving worker has no message endpoint now"


class MessageBufferFullError(ProcessError, BlockingIOError):
    """Raised by a non-blocking send when the receiving buffer has no room left.

    The receiving worker's socket (``unixsock``) or the pool's queue (``msgqueue``) is
    full because its readers are behind; a blocking send would wait instead.
    """

    code = "process-message-buffer-full"
    default_reason = "the receiving message buffer is full"
