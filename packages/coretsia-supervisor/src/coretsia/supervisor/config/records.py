"""The configuration as a tree of frozen attrs records, one per table of ``coretsia.toml``.

``[worker]`` holds the pool's keys flat (seed 000's shape, kept so a file written against
the seed still loads), so its keys are grouped here by what they govern: the pool itself
(:class:`WorkerSettings`), the runtime paths, the stop budgets, observability and the
process-entry settings. Its subtables (``[worker.control]``, ``[worker.tcp]``,
``[worker.hooks]``, ``[worker.source_options]``) and the top-level ``[[process]]`` tables
are records of their own. Each record names the TOML table its keys live in (``TABLE``),
which is how the converter routes a flat ``[worker]`` key to its record and how every
error names its dotted key.

Every default is seed 000's baseline. The value rules are validators from :mod:`.rules`,
so a record built in code or through :func:`attrs.evolve` is checked like a file; types
are the converter's business on the way in, mypy's in code.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Final

import attrs

from coretsia.supervisor.config.rules import (
    LOOPBACK_HOST,
    MAX_HOOKS,
    MAX_MEMORY_MB,
    MAX_REQUESTS,
    MIN_HEARTBEAT_TIMEOUT_MS,
    MIN_RESPAWN_INTERVAL_MS,
    STATE_TMP_SUFFIX,
    check_path_claims,
    each,
    holds,
    in_range,
    is_app_path,
    is_dotted,
    is_ip_address,
    is_runtime_path,
    is_state_path,
    is_target,
    is_task_source,
    off_or_range,
    option_items,
    process_tables,
)
from coretsia.supervisor.generation.spec import TaskType, TelemetryMode
from coretsia.supervisor.process_entries.rules import EVENT_LOOPS, IPC_TYPES, MAX_MSG_QUEUE_KEY
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.lifecycle import CANONICAL_PATHS
from coretsia.worker_protocol.vocabulary import (
    MAX_TIMEOUT_MS,
    MAX_WORKERS,
    ContainmentRequest,
    DriverRequest,
    TransportRequest,
)

OptionValue = str | int | bool

_TIMEOUT: Final = in_range(1, MAX_TIMEOUT_MS)


class SpawnMode(str, enum.Enum):
    """How the ``fork`` driver makes a worker: an interpreter each, or a fork of the
    generation's fork server (see ``docs/architecture.md``)."""

    EXEC = "exec"
    FORKSERVER = "forkserver"


@attrs.frozen(kw_only=True)
class WorkerSettings:
    """The pool's own ``[worker]`` keys: how many workers, what they serve, how spawned."""

    TABLE: ClassVar[str] = "worker"

    workers: int = attrs.field(default=4, validator=in_range(0, MAX_WORKERS))
    """Task-worker slots, 0..MAX_WORKERS; 0 only in a pool of process entries alone."""
    max_requests: int = attrs.field(default=1000, validator=in_range(1, MAX_REQUESTS))
    """Units of work a worker runs before it exits cleanly and is recycled."""
    max_memory_mb: int = attrs.field(default=0, validator=in_range(0, MAX_MEMORY_MB))
    """Resident memory (MiB) past which a worker, after a task (an entry: when seen), is
    recycled as at ``max_requests``; 0: off."""
    task_type: TaskType = TaskType.QUEUE
    """Which kind of task source the workers serve. An invalid one is seed 000's lifecycle
    failure, not a configuration error, so the converter checks it after everything else."""
    task_source: str | None = attrs.field(
        default=None, validator=holds(is_task_source, ConfigRule.INVALID_TARGET)
    )
    """``module:attr`` of the application's own task-source factory, or the name of an
    installed source (entry point of ``coretsia.worker.task_sources``); None: the one
    installed source serving ``task_type``."""
    app_path: tuple[str, ...] = attrs.field(
        default=(".",), validator=each(is_app_path, ConfigRule.UNSAFE_PATH)
    )
    """Root-relative directories prepended to each worker's ``sys.path``, in order."""
    driver: DriverRequest = DriverRequest.AUTO
    """How workers are spawned; availability is checked by the driver resolver."""
    containment: ContainmentRequest = ContainmentRequest.AUTO
    """What keeps a generation's processes from outliving it (``auto``: the strongest
    level the machine offers); availability is checked by the containment resolver."""
    spawn: SpawnMode = SpawnMode.EXEC
    """``exec``: every worker a fresh interpreter; ``forkserver``: forked by the
    generation's fork server (driver ``fork`` only; checked with the driver)."""
    preload: tuple[str, ...] = attrs.field(
        default=(), validator=each(is_dotted, ConfigRule.INVALID_TARGET, most=MAX_HOOKS)
    )
    """Modules the fork server imports before its first fork (``forkserver`` only): the
    workers share their pages, at the price of artifact-only boot for those modules."""


@attrs.frozen
class SourceOptions:
    """``[worker.source_options]``: scalars handed to the task source (its database...).

    The keys are the source's, not Coretsia's, so this is a mapping, not a record of
    fields; the source checks its own options (``check_options``).
    """

    TABLE: ClassVar[str] = "worker.source_options"

    items: tuple[tuple[str, OptionValue], ...] = attrs.field(
        default=(), validator=option_items, metadata={"key": TABLE}
    )

    def as_dict(self) -> dict[str, OptionValue]:
        """The options as a fresh mapping (``context.options`` in the workers)."""
        return dict(self.items)


_hook_targets: Final = each(is_target, ConfigRule.INVALID_TARGET, most=MAX_HOOKS)


@attrs.frozen(kw_only=True)
class Hooks:
    """``[worker.hooks]``: ``module:attr`` callables run around each task."""

    TABLE: ClassVar[str] = "worker.hooks"

    before: tuple[str, ...] = attrs.field(default=(), validator=_hook_targets)
    """Run before each task."""
    after: tuple[str, ...] = attrs.field(default=(), validator=_hook_targets)
    """Run after each task, success or failure."""
    reset: tuple[str, ...] = attrs.field(default=(), validator=_hook_targets)
    """Run last in every unit of work (close connections...)."""


HOOK_KINDS: Final = tuple(field.name for field in attrs.fields(Hooks))
"""``before``, ``after``, ``reset``: also the ``kind`` of a contributed hook."""


@attrs.frozen(kw_only=True)
class ControlSettings:
    """``[worker.control]``: how ``stop``, ``status`` and ``health`` reach the supervisor."""

    TABLE: ClassVar[str] = "worker.control"

    transport: TransportRequest = TransportRequest.AUTO
    """UNIX socket, loopback TCP, or the platform's pick."""


@attrs.frozen(kw_only=True)
class TcpSettings:
    """``[worker.tcp]``: the control address when the transport is TCP."""

    TABLE: ClassVar[str] = "worker.tcp"

    host: str = attrs.field(
        default=LOOPBACK_HOST, validator=holds(LOOPBACK_HOST.__eq__, ConfigRule.NOT_LOOPBACK)
    )
    """Always 127.0.0.1; present so a file can say so explicitly."""
    port: int = attrs.field(default=9327, validator=in_range(1, 65535))
    """Explicit, 1..65535 (an ephemeral port 0 is never allowed: probes must know it)."""


@attrs.frozen(kw_only=True)
class RuntimePaths:
    """The files the pool writes besides the lifecycle ones, root-relative.

    None may overlap another or a canonical lifecycle path; when two do, the later key in
    field order is named (``state_path`` also for its ``.tmp`` sibling).
    """

    TABLE: ClassVar[str] = "worker"

    socket_path: str = attrs.field(
        default="var/tmp/worker.sock", validator=holds(is_runtime_path, ConfigRule.UNSAFE_PATH)
    )
    """The UNIX control socket."""
    state_path: str = attrs.field(
        default="var/tmp/worker.state.json",
        validator=holds(is_state_path, ConfigRule.UNSAFE_PATH),
    )
    """The public, redacted state file."""
    stop_flag_path: str = attrs.field(
        default="var/tmp/worker.stop", validator=holds(is_runtime_path, ConfigRule.UNSAFE_PATH)
    )
    """The stop-signal file."""

    def __attrs_post_init__(self) -> None:
        check_path_claims(self.claims(), CANONICAL_PATHS)

    @property
    def state_tmp_path(self) -> str:
        """Where the state file is written before its atomic rename (not configurable)."""
        return self.state_path + STATE_TMP_SUFFIX

    def claims(self, *, socket: bool = True) -> tuple[tuple[str, str], ...]:
        """``(key, path)`` of every file the pool writes; the socket's only if ``socket``."""
        claimed = (
            (f"{self.TABLE}.state_path", self.state_path),
            (f"{self.TABLE}.state_path", self.state_tmp_path),
            (f"{self.TABLE}.stop_flag_path", self.stop_flag_path),
        )
        return (((f"{self.TABLE}.socket_path", self.socket_path),) if socket else ()) + claimed


@attrs.frozen(kw_only=True)
class Budgets:
    """The time budgets: start, stop (a full stop takes at most stop + 2 x force-kill),
    and how long a ready worker may stay silent."""

    TABLE: ClassVar[str] = "worker"

    start_timeout_ms: int = attrs.field(default=10000, validator=_TIMEOUT)
    """Budget for every slot to become ready."""
    stop_timeout_ms: int = attrs.field(default=10000, validator=_TIMEOUT)
    """Budget of the cooperative stop phase."""
    force_kill_timeout_ms: int = attrs.field(default=1000, validator=_TIMEOUT)
    """Budget of the terminate/reap phase, and again of the kill/reap phase."""
    heartbeat_timeout_ms: int = attrs.field(
        default=0, validator=off_or_range(MIN_HEARTBEAT_TIMEOUT_MS, MAX_TIMEOUT_MS)
    )
    """A ready worker that sends nothing for this long makes ``health`` fail
    (``worker-slot-unresponsive``); it beats every third of it. 0: off, and no worker
    runs the heartbeat at all."""


@attrs.frozen(kw_only=True)
class Observability:
    """What the pool tells about itself: tracebacks, spans and metrics."""

    TABLE: ClassVar[str] = "worker"

    debug: bool = False
    """UNSAFE opt-in: a failing worker writes its traceback (which may hold data) to stderr."""
    telemetry: TelemetryMode = TelemetryMode.OFF
    """``otel``: the supervisor and every worker record spans and metrics through
    OpenTelemetry (the ``otel`` extra); ``off`` imports none of it."""
    metrics_port: int = attrs.field(default=0, validator=in_range(0, 65535))
    """The supervisor's Prometheus text endpoint (the ``prometheus`` extra); 0: off."""
    metrics_host: str = attrs.field(
        default=LOOPBACK_HOST, validator=holds(is_ip_address, ConfigRule.NOT_ONE_OF)
    )
    """The address the endpoint binds: loopback unless another IP address is configured
    (Kubernetes scrapes the pod's IP)."""


@attrs.frozen(kw_only=True)
class ProcessTable:
    """One ``[[process]]`` table: seed 003's registration, written as configuration.

    Its key is its position in the file (``process[2].target``), which the enclosing
    :class:`ProcessSettings` knows, so the table's value rules are checked there.
    """

    target: str
    name: str | None = None
    workers: int = 1
    enable_async: bool | None = None
    enabled: bool = True


@attrs.frozen(kw_only=True)
class ProcessSettings:
    """Seed 003's named pool entries and the ``[worker]`` keys that govern them."""

    TABLE: ClassVar[str] = "worker"

    entries: tuple[ProcessTable, ...] = attrs.field(
        default=(), validator=process_tables, metadata={"key": "process"}
    )
    """The ``[[process]]`` tables, registered at ``start`` beside the task workers."""
    process_modules: tuple[str, ...] = attrs.field(
        default=(), validator=each(is_dotted, ConfigRule.INVALID_TARGET)
    )
    """Modules whose ``@process`` classes ``start`` discovers (imported, never scanned)."""
    ipc_type: str = attrs.field(
        default="none", validator=holds(IPC_TYPES.__contains__, ConfigRule.NOT_ONE_OF)
    )
    """Seed 003's pool-wide IPC mode for process entries: none, unixsock or msgqueue."""
    event_loop: str = attrs.field(
        default="asyncio", validator=holds(EVENT_LOOPS.__contains__, ConfigRule.NOT_ONE_OF)
    )
    """What async process entries run under: asyncio, or trio."""
    msg_queue_key: int = attrs.field(default=0, validator=in_range(0, MAX_MSG_QUEUE_KEY))
    """System V key of the ``msgqueue`` mode's queue; 0 makes a private queue."""
    respawn_interval_ms: int = attrs.field(
        default=100, validator=in_range(MIN_RESPAWN_INTERVAL_MS, MAX_TIMEOUT_MS)
    )
    """Least time between two spawns of one process entry's slot (a returning entry
    never spins the CPU); the one departure from seed 003's "no backoff"."""
    restart_intensity: int = attrs.field(default=0, validator=in_range(0, MAX_WORKERS * 1000))
    """Most entry replacements within ``restart_period_ms`` before the pool fails
    (``worker-restart-intensity-exceeded``); 0: unlimited, as seed 003 has it."""
    restart_period_ms: int = attrs.field(default=60000, validator=_TIMEOUT)
    """The window of ``restart_intensity``."""
    restart_backoff_max_ms: int = attrs.field(default=0, validator=in_range(0, MAX_TIMEOUT_MS))
    """Cap of an entry's exponential respawn back-off; 0: off (only the interval)."""


@attrs.frozen(kw_only=True)
class PoolConfig:
    """The validated ``coretsia.toml``: what ``start`` freezes into the generation.

    Its fields are the tables, in the order their rules are checked.
    """

    TABLE: ClassVar[str] = "worker"

    worker: WorkerSettings = WorkerSettings()
    source_options: SourceOptions = SourceOptions()
    hooks: Hooks = Hooks()
    control: ControlSettings = ControlSettings()
    tcp: TcpSettings = TcpSettings()
    paths: RuntimePaths = RuntimePaths()
    budgets: Budgets = Budgets()
    observability: Observability = Observability()
    processes: ProcessSettings = ProcessSettings()
