"""The generation's spec: what every worker of one generation boots from, as one record.

One builder makes it at start, for a task pool (``coretsia-supervisor start``) and a
process pool (``ProcessManager.start``) alike
(:func:`coretsia.supervisor.daemon.generation_builder.build_generation_spec`);
:mod:`coretsia.supervisor.generation.published` publishes it as ``generation.json`` through the
protocol's one codec, and every worker decodes it once, on its boot path, back into this
record: a worker reads attributes, never keys. The codec checks every field by its kind
on the way out and on the way in, so what a worker reads is what the builder made.

Only what workers use is in it: the pool's size and recycling limits, what a task worker
serves (its task type, source, options, hooks, the runtime entrypoint the guard
resolved), the process entries and how to re-create the main module, and where the
pool's IPC resources are. The supervisor's own settings (driver, control, paths, budgets)
stay in the configuration it holds.

On the worker boot path: it imports the protocol's light records and codec, which the
worker channel loads anyway; the process snapshot's checks only when the generation has
entries (see ``docs/performance.md``, "The worker's boot").
"""

from __future__ import annotations

import enum

from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol._codec import Frame, Nested
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.paths import is_safe_relative_path
from coretsia.worker_protocol.records import field
from coretsia.worker_protocol.vocabulary import MAX_WORKERS

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from coretsia.supervisor.process_entries.record import ProcessSnapshot

__all__ = [
    "GenerationSpec",
    "HookTargets",
    "IpcRecord",
    "MainModule",
    "RuntimeEntrypoint",
    "TaskType",
    "TelemetryMode",
]


class TaskType(str, enum.Enum):
    """What a task worker's loop serves (seed 000): selects the task source."""

    QUEUE = "queue"
    HTTP = "http"


class TelemetryMode(str, enum.Enum):
    """Whether the pool records seed 000's spans and metrics (see ``telemetry.py``)."""

    OFF = "off"
    OTEL = "otel"


_NAME = s.Str(None)
_TARGET = s.Str(None)
"""``module:attr``; whether it imports is the worker's step that uses it."""
_TARGETS = s.Array(_TARGET)


class _AppPath(s.Kind):
    """``.`` or a safe root-relative directory (``[worker] app_path``)."""

    __slots__ = ()

    def read(self, value: object, path: str) -> str:
        if type(value) is not str:
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        if value != "." and not is_safe_relative_path(value):
            raise s.FieldError(Reason.FRAME_INVALID_VALUE, path)
        return value


class _EventLoop(s.Kind):
    """One of the process entries' event loops (read only in a generation with entries:
    a task worker's boot does not import the process package)."""

    __slots__ = ()

    def read(self, value: object, path: str) -> str:
        # start-up budget: docs/performance.md#start-up-import-rules
        from coretsia.supervisor.process_entries.rules import EVENT_LOOPS

        if type(value) is not str:
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        if value not in EVENT_LOOPS:
            raise s.FieldError(Reason.FRAME_INVALID_VALUE, path)
        return value


class _Options(s.Kind):
    """``[worker.source_options]``: a JSON object of strings, integers and booleans, held
    as ``(key, value)`` pairs sorted by key (the order JSON is written in)."""

    __slots__ = ()

    def read(self, value: object, path: str) -> tuple[tuple[str, object], ...]:
        if type(value) is not dict:
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        for item in value.values():
            if type(item) not in (str, int, bool):
                raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        return tuple(sorted(value.items()))

    def write(self, value: object, path: str) -> object:
        if not isinstance(value, tuple):
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        return dict(value)


class _Snapshot(s.Kind):
    """The process entries: :mod:`coretsia.supervisor.process_entries.record`'s schema-1 record,
    checked by its own loader (every registration rule again)."""

    __slots__ = ()

    def read(self, value: object, path: str) -> ProcessSnapshot:
        # start-up budget: docs/performance.md#start-up-import-rules
        from coretsia.supervisor.process_entries.errors import ProcessError
        from coretsia.supervisor.process_entries.record import load_snapshot

        try:
            return load_snapshot(value)
        except ProcessError:
            failed = s.FieldError(Reason.FRAME_INVALID_VALUE, path)
        raise failed  # outside the handler: nothing chains to the loader's message

    def write(self, value: object, path: str) -> object:
        # start-up budget: docs/performance.md#start-up-import-rules
        from coretsia.supervisor.process_entries.record import ProcessSnapshot

        if not isinstance(value, ProcessSnapshot):
            raise s.FieldError(Reason.FRAME_WRONG_TYPE, path)
        return value.as_dict()


class HookTargets(Frame, kw_only=True):
    """Every hook by kind, ``module:attr`` each: the configured ones, then contributed ones."""

    before: tuple[str, ...] = field(default=(), kind=_TARGETS)
    after: tuple[str, ...] = field(default=(), kind=_TARGETS)
    reset: tuple[str, ...] = field(default=(), kind=_TARGETS)


class RuntimeEntrypoint(Frame, kw_only=True):
    """The runtime entrypoint the guard resolved at start
    (:mod:`~coretsia.supervisor.worker_side.runtime_guard`)."""

    name: str = field(kind=_NAME)
    provider: str = field(kind=_TARGET)


class MainModule(Frame, kw_only=True):
    """How a worker re-creates ``ProcessManager.start``'s import state (multiprocessing's
    spawn data): ``sys_path`` always; the main script's module ``name`` (under ``-m``) or
    its file ``path``, at most one, only when an entry lives in it."""

    name: str | None = field(default=None, kind=s.Nullable(_NAME))
    path: str | None = field(default=None, secret=True, kind=s.Nullable(_NAME))
    sys_path: tuple[str, ...] = field(default=(), secret=True, kind=s.Array(s.TEXT))

    def _check(self) -> None:
        s.require(self.name is None or self.path is None, "path")


class IpcRecord(Frame, kw_only=True):
    """Where the pool's IPC resources are (:mod:`~coretsia.supervisor.daemon.ipc_resources`):
    the ``unixsock`` directory, or the ``msgqueue`` queue's key and id."""

    unixsock_dir: str | None = field(default=None, kind=s.Omissible(_NAME))
    msgqueue_key: int | None = field(default=None, kind=s.Omissible(s.ANY_INT))
    msgqueue_id: int | None = field(default=None, kind=s.Omissible(s.ANY_INT))

    def _check(self) -> None:
        queue = self.msgqueue_key is not None
        s.require(queue is (self.msgqueue_id is not None), "msgqueue_id")
        s.require(queue is (self.unixsock_dir is None), "unixsock_dir")


class GenerationSpec(Frame, kw_only=True):
    """What every worker of a generation boots from (see the module docstring)."""

    workers: int = field(kind=s.Int(0, MAX_WORKERS))
    """Task-worker slots; the slots past them run the process entries, in order."""
    max_requests: int = field(kind=s.Int(1))
    max_memory_mb: int = field(default=0, kind=s.Int(0))
    """0: off."""
    heartbeat_timeout_ms: int = field(default=0, kind=s.Int(0))
    """0: off, and no worker runs the heartbeat at all."""
    debug: bool = field(default=False, kind=s.Bool())
    telemetry: TelemetryMode = field(default=TelemetryMode.OFF, kind=s.Choice(TelemetryMode))
    app_path: tuple[str, ...] = field(kind=s.Array(_AppPath()))
    task_type: TaskType = field(kind=s.Choice(TaskType))
    task_source: str | None = field(default=None, kind=s.Nullable(_TARGET))
    """The factory's ``module:attr``, discovery already resolved; None without task workers."""
    source_options: tuple[tuple[str, str | int | bool], ...] = field(
        default=(), secret=True, kind=_Options()
    )
    hooks: HookTargets = field(default=HookTargets(), kind=Nested(HookTargets))
    runtime_entrypoint: RuntimeEntrypoint | None = field(
        default=None, kind=s.Nullable(Nested(RuntimeEntrypoint))
    )
    """None without task workers."""
    processes: ProcessSnapshot | None = field(default=None, kind=s.Nullable(_Snapshot()))
    """The process entries; None without any."""
    event_loop: str | None = field(default=None, kind=s.Nullable(_EventLoop()))
    """What async process entries run under; None exactly when there are no entries."""
    process_main: MainModule | None = field(default=None, kind=s.Nullable(Nested(MainModule)))
    """None under ``coretsia-supervisor start`` (``app_path`` is the import path)."""
    ipc: IpcRecord | None = field(default=None, kind=s.Nullable(Nested(IpcRecord)))
    """Set by the supervisor once it made the resources, just before publishing."""

    def _check(self) -> None:
        s.require(self.workers == 0 or self.task_source is not None, "task_source")
        s.require((self.processes is None) is (self.event_loop is None), "event_loop")

    def with_ipc(self, ipc: IpcRecord | None) -> GenerationSpec:
        """This spec, recording where the pool's IPC resources are."""
        return GenerationSpec(**{**self._asdict(), "ipc": ipc})  # type: ignore[arg-type]
