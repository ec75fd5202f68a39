"""The error catalogue as data: every public ``CORETSIA_WORKER_*`` code and reason token.

Seed 000 fixes the codes and tokens; operators, scripts and third-party clients match on
them, so they are a stable contract: a token is never renamed or reused for another
meaning. Each reason belongs to exactly one code, and each code maps to one exit status.
The one-line explanations double as the troubleshooting table in ``docs/``.

Some entries extend the seed, each documented in ``docs/protocol.md``: the configuration
error (the seed leaves its shape to the framework), the protocol-violation tokens (the
seed's "strict about unknown keys" needs a name for each way a frame can be wrong), the
health reasons (the seed asks for a "bounded package-owned health token"), and reasons
the seed has no word for: three start failures, ``worker-peer-version-mismatch`` (the
three daemons refuse a peer of another version), ``worker-start-cancelled`` (stopped while
starting) and ``worker-interpreter-unavailable`` (the pool's interpreter cannot be executed
to start a process); two already-running reasons, ``worker-generation-draining`` (a killed
generation's processes still hold the fence) and ``worker-generation-unkillable`` (what a
killed generation left behind cannot be killed); and four lifecycle failures, the hook
failures ``worker-task-hook-failed`` and ``worker-task-reset-failed``,
``worker-restart-intensity-exceeded`` (process entries, beyond seed 003: off by default)
and ``worker-containment-failed`` (the containment level could not be set up);
``worker-platform-unsupported`` (a platform no pool can run on);
``worker-generation-untrusted`` (a worker met a generation its supervisor did not write);
and two task-source failures that name their cause where seed 000 has only "receive" or
"settlement failed", ``worker-task-source-corrupt`` and ``worker-task-source-full`` (a
source raises :class:`~coretsia.worker_protocol.task_source.TaskSourceStorageError` to
report them, at ``assert_ready`` as while running).

One code is not a worker code at all: seed 000's runtime-entrypoint guard is the
Kernel's, whose failures "must not be reclassified as worker exceptions", so
``CORETSIA_RUNTIME_ENTRYPOINT_FAILED: runtime-entrypoint-unavailable`` keeps a code and a
token of its own (:mod:`coretsia.worker_protocol.runtime_entrypoints`).
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol.exit_codes import ExitCode

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final


class ErrorCode(str, enum.Enum):
    """The ``CORETSIA_WORKER_*`` codes: the part of an error a script matches on first."""

    START_FAILED = "CORETSIA_WORKER_START_FAILED"
    LIFECYCLE_FAILED = "CORETSIA_WORKER_LIFECYCLE_FAILED"
    FORK_FAILED = "CORETSIA_WORKER_FORK_FAILED"
    ALREADY_RUNNING = "CORETSIA_WORKER_ALREADY_RUNNING"
    COMMUNICATION_FAILED = "CORETSIA_WORKER_COMMUNICATION_FAILED"
    NOT_RUNNING = "CORETSIA_WORKER_NOT_RUNNING"
    CONFIG_INVALID = "CORETSIA_WORKER_CONFIG_INVALID"
    PROTOCOL_VIOLATION = "CORETSIA_WORKER_PROTOCOL_VIOLATION"
    RUNTIME_ENTRYPOINT_FAILED = "CORETSIA_RUNTIME_ENTRYPOINT_FAILED"


class Reason(str, enum.Enum):
    """Reason tokens: the bounded, package-owned word after the code."""

    # CORETSIA_WORKER_START_FAILED
    START_FAILED = "worker-start-failed"
    TASK_SOURCE_MISSING = "worker-task-source-missing"
    TASK_SOURCE_AMBIGUOUS = "worker-task-source-ambiguous"
    TASK_SOURCE_INVALID = "worker-task-source-invalid"
    TASK_SOURCE_UNRESOLVABLE = "worker-task-source-unresolvable"
    TASK_SOURCE_NOT_READY = "worker-task-source-not-ready"
    READINESS_TIMEOUT = "worker-readiness-timeout"
    READINESS_INVALID = "worker-readiness-invalid"
    CHILD_START_FAILED = "worker-child-start-failed"
    SIGNAL_HANDLING_UNAVAILABLE = "worker-signal-handling-unavailable"
    PEER_VERSION_MISMATCH = "worker-peer-version-mismatch"
    START_CANCELLED = "worker-start-cancelled"
    PLATFORM_UNSUPPORTED = "worker-platform-unsupported"
    INTERPRETER_UNAVAILABLE = "worker-interpreter-unavailable"
    GENERATION_UNTRUSTED = "worker-generation-untrusted"
    # CORETSIA_WORKER_LIFECYCLE_FAILED
    LIFECYCLE_FAILED = "worker-lifecycle-failed"
    INVALID_STATE = "worker-invalid-state"
    TASK_SOURCE_TERMINATED = "worker-task-source-terminated"
    TASK_SOURCE_RECEIVE_FAILED = "worker-task-source-receive-failed"
    TASK_SETTLEMENT_FAILED = "worker-task-settlement-failed"
    TASK_SOURCE_CORRUPT = "worker-task-source-corrupt"
    TASK_SOURCE_FULL = "worker-task-source-full"
    TASK_HOOK_FAILED = "worker-task-hook-failed"
    TASK_RESET_FAILED = "worker-task-reset-failed"
    CHILD_EXITED = "worker-child-exited"
    SHUTDOWN_FAILED = "worker-shutdown-failed"
    RUNTIME_CLEANUP_FAILED = "worker-runtime-cleanup-failed"
    LIFECYCLE_LOCK_FAILED = "worker-lifecycle-lock-failed"
    LIFECYCLE_LOCATOR_FAILED = "worker-lifecycle-locator-failed"
    PROCESS_HOST_FAILED = "worker-process-host-failed"
    RESTART_INTENSITY_EXCEEDED = "worker-restart-intensity-exceeded"
    CONTAINMENT_FAILED = "worker-containment-failed"
    # CORETSIA_WORKER_FORK_FAILED
    FORK_FAILED = "worker-fork-failed"
    # CORETSIA_WORKER_ALREADY_RUNNING
    ALREADY_RUNNING = "worker-already-running"
    GENERATION_DRAINING = "worker-generation-draining"
    GENERATION_UNKILLABLE = "worker-generation-unkillable"
    # CORETSIA_WORKER_COMMUNICATION_FAILED
    COMMUNICATION_FAILED = "worker-communication-failed"
    # CORETSIA_WORKER_NOT_RUNNING
    NOT_RUNNING = "worker-not-running"
    # CORETSIA_WORKER_CONFIG_INVALID (extension: key and rule travel as separate fields)
    CONFIG_INVALID = "worker-config-invalid"
    # CORETSIA_WORKER_PROTOCOL_VIOLATION (extension: one token per way a frame is wrong)
    FRAME_OVERSIZED = "worker-frame-oversized"
    FRAME_NOT_UTF8 = "worker-frame-not-utf8"
    FRAME_NOT_JSON = "worker-frame-not-json"
    FRAME_DUPLICATE_KEY = "worker-frame-duplicate-key"
    FRAME_NOT_OBJECT = "worker-frame-not-object"
    FRAME_UNKNOWN_KEY = "worker-frame-unknown-key"
    FRAME_MISSING_KEY = "worker-frame-missing-key"
    FRAME_WRONG_TYPE = "worker-frame-wrong-type"
    FRAME_INVALID_VALUE = "worker-frame-invalid-value"
    FRAME_UNSUPPORTED_VERSION = "worker-frame-unsupported-version"
    FRAME_UNKNOWN_TYPE = "worker-frame-unknown-type"
    FRAME_UNEXPECTED = "worker-frame-unexpected"
    FRAME_TRUNCATED = "worker-frame-truncated"
    # CORETSIA_RUNTIME_ENTRYPOINT_FAILED (the seed's Kernel guard, not a worker failure)
    RUNTIME_ENTRYPOINT_UNAVAILABLE = "runtime-entrypoint-unavailable"


class HealthReason(str, enum.Enum):
    """Why ``health`` answered as it did: the only values its ``reason`` field takes."""

    HEALTHY = "worker-pool-healthy"
    STARTING = "worker-pool-starting"
    STOPPING = "worker-pool-stopping"
    SLOTS_NOT_READY = "worker-slots-not-ready"
    SLOT_UNRESPONSIVE = "worker-slot-unresponsive"
    TASK_SOURCE_UNAVAILABLE = "worker-task-source-unavailable"
    CHILD_FAILURE_PENDING = "worker-child-failure-pending"


class ConfigRule(str, enum.Enum):
    """Which configuration rule a value broke; paired with the key, never the value."""

    FILE_MISSING = "file-missing"
    FILE_UNREADABLE = "file-unreadable"
    NOT_TOML = "not-toml"
    UNKNOWN_KEY = "unknown-key"
    REQUIRED = "required"
    WRONG_TYPE = "wrong-type"
    OUT_OF_RANGE = "out-of-range"
    NOT_ONE_OF = "not-one-of"
    NOT_LOOPBACK = "not-loopback"
    UNSAFE_PATH = "unsafe-path"
    OVERLAPPING_PATH = "overlapping-path"
    RESERVED_PATH = "reserved-path"
    UNAVAILABLE = "unavailable"
    INVALID_TARGET = "invalid-target"
    DUPLICATE = "duplicate"
    UNTRUSTED_PATH = "untrusted-path"


class SourceFault(str, enum.Enum):
    """Why a task source cannot reach its backend: the detail of a source's failure.

    Carried beside the reason token (``worker-task-source-not-ready (source
    authentication)``), in ``task_source.unavailable`` log events, never with the
    backend's own message (which may name hosts, users, paths or hold a secret).
    """

    UNREACHABLE = "unreachable"
    """No answer: the server is down, restarting, or the network or socket is gone."""
    AUTHENTICATION = "authentication"
    """The server answered and refused the credentials (unknown role, wrong password)."""
    MISSING_DATABASE = "missing-database"
    """The server answered; the database named does not exist."""
    PERMISSION = "permission"
    """Connected (or refused the connection) for lack of a privilege."""


#: Which code each reason belongs to.
REASON_CODES: Final[dict[Reason, ErrorCode]] = {
    **dict.fromkeys(
        (
            Reason.START_FAILED,
            Reason.TASK_SOURCE_MISSING,
            Reason.TASK_SOURCE_AMBIGUOUS,
            Reason.TASK_SOURCE_INVALID,
            Reason.TASK_SOURCE_UNRESOLVABLE,
            Reason.TASK_SOURCE_NOT_READY,
            Reason.READINESS_TIMEOUT,
            Reason.READINESS_INVALID,
            Reason.CHILD_START_FAILED,
            Reason.SIGNAL_HANDLING_UNAVAILABLE,
            Reason.PEER_VERSION_MISMATCH,
            Reason.START_CANCELLED,
            Reason.PLATFORM_UNSUPPORTED,
            Reason.INTERPRETER_UNAVAILABLE,
            Reason.GENERATION_UNTRUSTED,
        ),
        ErrorCode.START_FAILED,
    ),
    **dict.fromkeys(
        (
            Reason.LIFECYCLE_FAILED,
            Reason.INVALID_STATE,
            Reason.TASK_SOURCE_TERMINATED,
            Reason.TASK_SOURCE_RECEIVE_FAILED,
            Reason.TASK_SETTLEMENT_FAILED,
            Reason.TASK_SOURCE_CORRUPT,
            Reason.TASK_SOURCE_FULL,
            Reason.TASK_HOOK_FAILED,
            Reason.TASK_RESET_FAILED,
            Reason.CHILD_EXITED,
            Reason.SHUTDOWN_FAILED,
            Reason.RUNTIME_CLEANUP_FAILED,
            Reason.LIFECYCLE_LOCK_FAILED,
            Reason.LIFECYCLE_LOCATOR_FAILED,
            Reason.PROCESS_HOST_FAILED,
            Reason.RESTART_INTENSITY_EXCEEDED,
            Reason.CONTAINMENT_FAILED,
        ),
        ErrorCode.LIFECYCLE_FAILED,
    ),
    Reason.FORK_FAILED: ErrorCode.FORK_FAILED,
    Reason.ALREADY_RUNNING: ErrorCode.ALREADY_RUNNING,
    Reason.GENERATION_DRAINING: ErrorCode.ALREADY_RUNNING,
    Reason.GENERATION_UNKILLABLE: ErrorCode.ALREADY_RUNNING,
    Reason.COMMUNICATION_FAILED: ErrorCode.COMMUNICATION_FAILED,
    Reason.NOT_RUNNING: ErrorCode.NOT_RUNNING,
    Reason.CONFIG_INVALID: ErrorCode.CONFIG_INVALID,
    **dict.fromkeys(
        (r for r in Reason if r.value.startswith("worker-frame-")),
        ErrorCode.PROTOCOL_VIOLATION,
    ),
    Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE: ErrorCode.RUNTIME_ENTRYPOINT_FAILED,
}

#: The exit status a command ends with when it fails with this code.
EXIT_CODES: Final[dict[ErrorCode, ExitCode]] = {
    ErrorCode.START_FAILED: ExitCode.FAILURE,
    ErrorCode.LIFECYCLE_FAILED: ExitCode.FAILURE,
    ErrorCode.FORK_FAILED: ExitCode.FAILURE,
    ErrorCode.ALREADY_RUNNING: ExitCode.FAILURE,
    ErrorCode.COMMUNICATION_FAILED: ExitCode.UNKNOWN,
    ErrorCode.NOT_RUNNING: ExitCode.NOT_RUNNING,
    ErrorCode.CONFIG_INVALID: ExitCode.CONFIG_INVALID,
    ErrorCode.PROTOCOL_VIOLATION: ExitCode.UNKNOWN,
    ErrorCode.RUNTIME_ENTRYPOINT_FAILED: ExitCode.FAILURE,
}

#: What each reason means to an operator: the likely cause, then what to do.
EXPLANATIONS: Final[dict[Reason, str]] = {
    Reason.START_FAILED: "start failed for an unexpected reason; run again with the "
    "debug switch to see the traceback",
    Reason.TASK_SOURCE_MISSING: "no installed task source serves the configured task_type; "
    "install one or set task_source",
    Reason.TASK_SOURCE_AMBIGUOUS: "several task sources serve the task_type; select one by "
    "name in the configuration",
    Reason.TASK_SOURCE_INVALID: "the task source factory returned an object without "
    "assert_ready/receive",
    Reason.TASK_SOURCE_UNRESOLVABLE: "the task source could not be imported or built in "
    "the worker; check the module:attr and the application's import path",
    Reason.TASK_SOURCE_NOT_READY: "the task source's assert_ready failed (its backend is "
    "unreachable?)",
    Reason.READINESS_TIMEOUT: "a worker did not become ready within start_timeout_ms",
    Reason.READINESS_INVALID: "a worker sent a malformed or unauthenticated readiness frame",
    Reason.CHILD_START_FAILED: "a worker process could not be started or failed during boot",
    Reason.SIGNAL_HANDLING_UNAVAILABLE: "signal handling cannot be installed here (not the "
    "main thread, or inside a running event loop)",
    Reason.PEER_VERSION_MISMATCH: "the supervisor, guardian and proc host are not the same "
    "version; reinstall them together",
    Reason.START_CANCELLED: "a stop (signal or stop command) arrived before every worker was "
    "ready; the pool was shut down without ever running",
    Reason.PLATFORM_UNSUPPORTED: "no pool runs on this platform (Windows, or no fork and "
    "exec); Linux is supported and tested, macOS and other POSIX systems run untested",
    Reason.INTERPRETER_UNAVAILABLE: "the Python interpreter that runs the pool could not be "
    "executed to start a worker or a helper process (gone, not executable by the pool's "
    "user, on a noexec mount, or not a program); reinstall it or fix its permissions",
    Reason.GENERATION_UNTRUSTED: "a worker refused to boot: the generation current names "
    "is not the one its supervisor published, or var/generations is not trusted (owned by "
    "another user, writable by group or others); something else writes there: find it",
    Reason.LIFECYCLE_FAILED: "the supervisor failed for an unexpected reason",
    Reason.INVALID_STATE: "an invalid state or value was met (for example an invalid task_type)",
    Reason.TASK_SOURCE_TERMINATED: "receive() returned None outside shutdown",
    Reason.TASK_SOURCE_RECEIVE_FAILED: "the task source's receive() raised",
    Reason.TASK_SETTLEMENT_FAILED: "complete() or fail() of a task raised",
    Reason.TASK_SOURCE_CORRUPT: "the task source's storage is damaged (an SQLite queue file "
    "that is corrupt or not a database); run coretsia-queue check, then recover what can "
    "be saved (docs/operations.md)",
    Reason.TASK_SOURCE_FULL: "the task source's storage is full (no space left on the SQLite "
    "queue's file system); free space, then start again",
    Reason.TASK_HOOK_FAILED: "an after hook raised: the unit of work is left unsettled (a "
    "queue message stays leased and is recovered by the next generation)",
    Reason.TASK_RESET_FAILED: "a reset hook raised: the worker cannot promise a clean state "
    "for the next task, so it stops",
    Reason.CHILD_EXITED: "a worker exited unexpectedly while the pool was running",
    Reason.SHUTDOWN_FAILED: "a worker survived every shutdown phase (SIGKILL included); the "
    "lock stays held until it is gone",
    Reason.RUNTIME_CLEANUP_FAILED: "a runtime file could not be removed during cleanup",
    Reason.LIFECYCLE_LOCK_FAILED: "the lifecycle lock could not be created or probed; check "
    "var/tmp permissions",
    Reason.LIFECYCLE_LOCATOR_FAILED: "the private locator could not be written",
    Reason.PROCESS_HOST_FAILED: "the guardian, the proc host or the fork server died or "
    "broke its protocol",
    Reason.RESTART_INTENSITY_EXCEEDED: "process entries were replaced more often than "
    "the configured restart intensity allows",
    Reason.CONTAINMENT_FAILED: "the guardian could not set up the containment level in "
    "force (its cgroup or PID namespace) although start found it available",
    Reason.FORK_FAILED: "the OS refused to create a process (limits, memory)",
    Reason.ALREADY_RUNNING: "a worker generation of this root is active or still being "
    "cleaned up; stop it first, or wait",
    Reason.GENERATION_DRAINING: "no supervisor holds the lock, but processes of a previous "
    "generation (its guardian was killed) are still alive; wait for them to end, or find "
    "them (they hold var/tmp/worker.generation.lock open) and stop them",
    Reason.GENERATION_UNKILLABLE: "processes a previous generation of this root left "
    "behind are alive and could not be killed (another user's, or they survived SIGKILL); "
    "find and stop them, then start again",
    Reason.COMMUNICATION_FAILED: "the lock is held but the supervisor cannot be reached or "
    "its locator is invalid",
    Reason.NOT_RUNNING: "no worker generation is active for this root",
    Reason.CONFIG_INVALID: "a configuration key breaks a rule; the key and rule are named",
    Reason.FRAME_OVERSIZED: "a frame exceeded the maximum frame size",
    Reason.FRAME_NOT_UTF8: "a frame was not valid UTF-8",
    Reason.FRAME_NOT_JSON: "a frame was not valid JSON",
    Reason.FRAME_DUPLICATE_KEY: "a frame repeated a key",
    Reason.FRAME_NOT_OBJECT: "a frame was not a JSON object",
    Reason.FRAME_UNKNOWN_KEY: "a frame carried a key its schema does not define",
    Reason.FRAME_MISSING_KEY: "a frame lacked a key its schema requires",
    Reason.FRAME_WRONG_TYPE: "a frame field had the wrong JSON type",
    Reason.FRAME_INVALID_VALUE: "a frame field had a value outside its domain",
    Reason.FRAME_UNSUPPORTED_VERSION: "a frame carried a version this side does not speak",
    Reason.FRAME_UNKNOWN_TYPE: "a frame carried an unknown type tag",
    Reason.FRAME_UNEXPECTED: "a frame came out of the order the conversation allows (the "
    "peer sent it, or this side was asked to send it)",
    Reason.FRAME_TRUNCATED: "the peer closed the stream in the middle of a frame",
    Reason.RUNTIME_ENTRYPOINT_UNAVAILABLE: "no installed distribution provides the runtime "
    "entrypoint of the pool's task_type (queue: bg.worker_queue, http: http.worker); "
    "install one that does, or change task_type",
}
