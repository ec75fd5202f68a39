"""The typed exceptions of Coretsia Worker.

Every public failure is a :class:`WorkerError` whose ``str()`` is exactly
``CODE: reason-token``. A wrapped exception may ride along as ``__cause__`` for debugging,
but its message never reaches ``str()``, ``repr()`` or ``args``: exception messages of
application code, the OS or a library can carry paths, ports, payloads or credentials.

Each concrete class also subclasses the closest stdlib type, so a caller's existing
``except ConnectionError`` or ``except ValueError`` still works.
"""

from __future__ import annotations

import re

from coretsia.worker_protocol.catalogue import (
    EXIT_CODES,
    REASON_CODES,
    ConfigRule,
    ErrorCode,
    Reason,
    SourceFault,
)

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import ClassVar, Final

    from coretsia.worker_protocol.exit_codes import ExitCode

__all__ = [
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "RuntimeEntrypointError",
    "WorkerAlreadyRunningError",
    "WorkerCommunicationFailedError",
    "WorkerConfigError",
    "WorkerError",
    "WorkerForkFailedError",
    "WorkerLifecycleFailedError",
    "WorkerNotRunningError",
    "WorkerStartFailedError",
    "error_for",
]


class WorkerError(Exception):
    """Base of every Coretsia failure; ``str()`` is ``CODE: reason-token``, nothing more."""

    code: ClassVar[ErrorCode]
    fault: SourceFault | None = None
    """Why a task source could not reach its backend, when that is the failure (a detail
    beside the token, printed as ``(source <fault>)``; see :func:`error_for`)."""

    def __init__(self, reason: Reason | None = None) -> None:
        chosen = self.default_reason() if reason is None else Reason(reason)
        if REASON_CODES[chosen] is not self.code:
            # A programming error: the token belongs to another code. Fail loudly in
            # tests, but never with a message that could carry anything unsafe.
            msg = f"{chosen.value} is not a reason of {self.code.value}"
            raise ValueError(msg)
        self.reason: Reason = chosen
        super().__init__(f"{self.code.value}: {chosen.value}")

    @classmethod
    def default_reason(cls) -> Reason:
        """The catch-all token of this code (its first reason in the catalogue)."""
        return next(r for r, c in REASON_CODES.items() if c is cls.code)

    @property
    def exit_code(self) -> ExitCode:
        """The exit status a command ends with when it fails with this error."""
        return EXIT_CODES[self.code]

    def __str__(self) -> str:
        return f"{self.code.value}: {self.reason.value}"

    def __reduce__(self) -> tuple[type[WorkerError], tuple[Reason]]:
        return (type(self), (self.reason,))


class WorkerStartFailedError(WorkerError, RuntimeError):
    """Raised when validation, task-source selection, readiness or a spawn fails at start."""

    code = ErrorCode.START_FAILED


class WorkerLifecycleFailedError(WorkerError, RuntimeError):
    """Raised when a running pool fails: a child exits, a task source breaks, shutdown fails."""

    code = ErrorCode.LIFECYCLE_FAILED


class WorkerForkFailedError(WorkerError, ChildProcessError):
    """Raised when the OS refuses to create a worker process."""

    code = ErrorCode.FORK_FAILED


class WorkerAlreadyRunningError(WorkerError, RuntimeError):
    """Raised when a generation of this root is active or still being cleaned up."""

    code = ErrorCode.ALREADY_RUNNING


class WorkerCommunicationFailedError(WorkerError, ConnectionError):
    """Raised when the lock is held but the supervisor cannot be reached or trusted."""

    code = ErrorCode.COMMUNICATION_FAILED


class WorkerNotRunningError(WorkerError, ProcessLookupError):
    """Raised when no worker generation is active for the root (the lock is free)."""

    code = ErrorCode.NOT_RUNNING


_SAFE_KEY: Final = re.compile(r"(--)?[A-Za-z0-9_][A-Za-z0-9_.\[\]-]{0,63}")
"""A short plain name: ``re`` costs nothing here, ``json`` (loaded on both paths) has it."""


class WorkerConfigError(WorkerError, ValueError):
    """Raised when a configuration key breaks a rule.

    The key and the rule are separate safe fields; the offending value never travels. A key
    that is not itself a short plain name (a pasted secret, say) is reported as
    ``<unprintable>``.
    """

    code = ErrorCode.CONFIG_INVALID

    def __init__(self, key: str, rule: ConfigRule) -> None:
        super().__init__(Reason.CONFIG_INVALID)
        self.key: str = key if _SAFE_KEY.fullmatch(key) else "<unprintable>"
        self.rule: ConfigRule = ConfigRule(rule)

    def __reduce__(self) -> tuple[type[WorkerError], tuple[str, ConfigRule]]:  # type: ignore[override]
        return (type(self), (self.key, self.rule))


class RuntimeEntrypointError(WorkerError, LookupError):
    """Raised when no installed distribution provides the pool's runtime entrypoint.

    Seed 000's Kernel guard failure: its own code
    (``CORETSIA_RUNTIME_ENTRYPOINT_FAILED``), never a worker code. ``entrypoint`` names the
    missing runtime entrypoint (``http.worker``), a fixed id of
    :mod:`coretsia.worker_protocol.runtime_entrypoints`, never configuration.
    """

    code = ErrorCode.RUNTIME_ENTRYPOINT_FAILED

    def __init__(self, entrypoint: str) -> None:
        super().__init__(Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE)
        self.entrypoint: str = entrypoint if _SAFE_KEY.fullmatch(entrypoint) else "<unprintable>"

    def __reduce__(self) -> tuple[type[WorkerError], tuple[str]]:  # type: ignore[override]
        return (type(self), (self.entrypoint,))


class ProtocolError(WorkerError, ValueError):
    """A frame broke the protocol. Abstract: raise its local or remote subclass.

    Like h11, the two subclasses tell "we tried to send something invalid"
    (:class:`LocalProtocolError`) from "the peer sent something invalid"
    (:class:`RemoteProtocolError`). ``path`` names the schema field at fault (``$.pid``)
    when it is a known field; an unknown key is never echoed, nor is any value.
    """

    code = ErrorCode.PROTOCOL_VIOLATION

    def __init__(self, reason: Reason, path: str = "$") -> None:
        if type(self) is ProtocolError:
            msg = "ProtocolError is abstract: raise LocalProtocolError or RemoteProtocolError"
            raise TypeError(msg)
        super().__init__(reason)
        self.path: str = path

    def __reduce__(self) -> tuple[type[WorkerError], tuple[Reason, str]]:  # type: ignore[override]
        return (type(self), (self.reason, self.path))


class LocalProtocolError(ProtocolError):
    """Raised when this side is asked to encode a frame that breaks the protocol."""


class RemoteProtocolError(ProtocolError):
    """Raised when the peer sent a frame that breaks the protocol."""


_BY_CODE: Final[dict[ErrorCode, type[WorkerError]]] = {
    cls.code: cls
    for cls in (
        WorkerStartFailedError,
        WorkerLifecycleFailedError,
        WorkerForkFailedError,
        WorkerAlreadyRunningError,
        WorkerCommunicationFailedError,
        WorkerNotRunningError,
    )
}


def error_for(reason: Reason, fault: SourceFault | None = None) -> WorkerError:
    """Build the exception of the right class for a reason token (and a source's fault).

    Used where a reason arrives as data (an error response, a worker's terminal frame).
    Configuration, protocol and runtime-entrypoint reasons need their extra fields and are
    mapped to the catch-all communication failure instead (a worker's entrypoint failure
    is rebuilt by the supervisor, which knows the pool's task type).
    """
    code = REASON_CODES[Reason(reason)]
    cls = _BY_CODE.get(code)
    if cls is None:
        return WorkerCommunicationFailedError()
    error = cls(reason)
    error.fault = fault
    return error
