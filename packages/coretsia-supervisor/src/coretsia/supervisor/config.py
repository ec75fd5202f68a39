"""The project's configuration: ``coretsia.toml``, table ``[worker]``, as one frozen value.

``start`` reads and validates the file once, before anything else happens, and the result
is what the generation snapshot is made of (see ``docs/configuration.md``); workers never
read the file. ``stop``, ``status`` and ``health`` never read it either: they find the
supervisor through the lock and the locator, so a broken config can never stop an
operator from stopping a running pool.

Why so strict:

- Unknown keys are errors, at every level. A typo (``stop_timeout = 5000``) that silently
  falls back to a default is a shutdown budget nobody chose.
- Types are exact. TOML already distinguishes ``4`` from ``"4"`` and ``true`` from ``1``;
  accepting either would make two spellings of one file mean the same thing today and
  something different the day a coercion rule changes.
- Errors name the dotted key and the broken rule, never the value: values can be secrets
  pasted into the wrong key, and error text reaches logs and terminals.

Every check lives in :class:`PoolConfig` itself (``__attrs_post_init__``), so a
``PoolConfig`` built in code or through :func:`attrs.evolve` obeys exactly the rules a
file does. :func:`parse_config` only rejects unknown keys, flattens the subtables and
turns accepted strings into enum members.
"""

from __future__ import annotations

import enum
import pathlib
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from coretsia.supervisor.process.rules import EVENT_LOOPS, IPC_TYPES, MAX_MSG_QUEUE_KEY
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerLifecycleFailedError
from coretsia.worker_protocol.lifecycle import CANONICAL_PATHS
from coretsia.worker_protocol.paths import is_safe_relative_path, paths_overlap
from coretsia.worker_protocol.vocabulary import (
    MAX_TIMEOUT_MS,
    MAX_WORKERS,
    DriverRequest,
    TransportRequest,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "CONFIG_FILE",
    "MAX_REQUESTS",
    "PoolConfig",
    "TaskType",
    "TelemetryMode",
    "load_config",
    "parse_config",
]

CONFIG_FILE: Final = "coretsia.toml"
"""The default configuration file, relative to the project root."""

MAX_REQUESTS: Final = 10_000_000
"""Largest ``max_requests``: a bound, so a typo of extra zeros is caught, not obeyed."""

MAX_TARGET_CHARS: Final = 256
"""Longest accepted ``task_source``; it travels in the generation and in worker frames."""

LOOPBACK_HOST: Final = "127.0.0.1"
"""The only TCP control host: the control channel is never reachable off the machine."""

FILE_KEY: Final = "config"
"""The key named by errors about the file as a whole (missing, unreadable, not TOML).

It is also the key of an unsafe ``--config`` path: the option's own spelling cannot be
used, because :class:`WorkerConfigError` masks any key that does not start with a letter,
digit or underscore.
"""

_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_IDENTIFIER}(?:\.{_IDENTIFIER})*"
_TARGET: Final = re.compile(rf"{_DOTTED}:{_DOTTED}")
"""``module:attr``: a dotted module and a dotted attribute, ASCII identifiers only."""
_SOURCE_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""The name of an installed task source (its entry point's name), e.g. ``sqlite``."""
_OPTION_KEY: Final = re.compile(_IDENTIFIER)
MAX_OPTIONS: Final = 64
"""Most ``[worker.source_options]`` entries; each is a short scalar."""
MAX_OPTION_CHARS: Final = 1024
MAX_HOOKS: Final = 32
"""Most hooks of one kind (before, after, reset)."""
HOOK_KINDS: Final = ("before", "after", "reset")

OptionValue = str | int | bool


class TaskType(str, enum.Enum):
    """What a task worker's loop serves (seed 000): selects the task source."""

    QUEUE = "queue"
    HTTP = "http"


class TelemetryMode(str, enum.Enum):
    """Whether the pool records seed 000's spans and metrics (see ``telemetry.py``)."""

    OFF = "off"
    OTEL = "otel"


_DRIVER_VALUES: Final[dict[str, DriverRequest]] = {
    **{d.value: d for d in DriverRequest},
    # Seed 000 calls the fork-exec driver "pcntl" (PHP's process-control extension); a
    # config written against the seed keeps working and means the same driver.
    "pcntl": DriverRequest.FORK,
}

#: The strings each enum field accepts, and the member each one becomes.
_ENUM_FIELDS: Final[dict[str, Mapping[str, enum.Enum]]] = {
    "task_type": {t.value: t for t in TaskType},
    "driver": _DRIVER_VALUES,
    "control_transport": {t.value: t for t in TransportRequest},
    "telemetry": {t.value: t for t in TelemetryMode},
}

_TOP_LEVEL: Final = frozenset({"worker", "process"})
"""Top-level keys of the file: ``[worker]`` and seed 003's ``[[process]]`` entries."""

_PROCESS_KEYS: Final = frozenset({"name", "target", "workers", "enable_async", "enabled"})
"""Keys of one ``[[process]]`` table: the arguments of ``ProcessManager.add_batch``."""

MIN_RESPAWN_INTERVAL_MS: Final = 10

_WORKER_KEYS: Final = frozenset(
    {
        "workers",
        "max_requests",
        "task_type",
        "task_source",
        "app_path",
        "driver",
        "control",
        "tcp",
        "socket_path",
        "state_path",
        "stop_flag_path",
        "start_timeout_ms",
        "stop_timeout_ms",
        "force_kill_timeout_ms",
        "debug",
        "telemetry",
        "source_options",
        "hooks",
        "process_modules",
        "ipc_type",
        "msg_queue_key",
        "event_loop",
        "respawn_interval_ms",
        "restart_intensity",
        "restart_period_ms",
        "restart_backoff_max_ms",
        "metrics_host",
        "metrics_port",
    }
)
_CONTROL_KEYS: Final = {"transport": "control_transport"}
_TCP_KEYS: Final = {"host": "tcp_host", "port": "tcp_port"}

#: The dotted config key of every field, for error messages.
_KEYS: Final[dict[str, str]] = {
    **{name: f"worker.{name}" for name in _WORKER_KEYS - {"control", "tcp", "hooks"}},
    **{f"{kind}_hooks": f"worker.hooks.{kind}" for kind in HOOK_KINDS},
    **{field: f"worker.control.{key}" for key, field in _CONTROL_KEYS.items()},
    **{field: f"worker.tcp.{key}" for key, field in _TCP_KEYS.items()},
}


def config_error(field: str, rule: ConfigRule) -> WorkerConfigError:
    """The configuration error of a ``PoolConfig`` field, under its dotted key."""
    return WorkerConfigError(_KEYS[field], rule)


def _is_target(value: str) -> bool:
    return len(value) <= MAX_TARGET_CHARS and bool(_TARGET.fullmatch(value))


def _check_int(field: str, value: object, low: int, high: int) -> None:
    # `type() is`, not isinstance: a TOML boolean is a Python bool, and bool is an int.
    if type(value) is not int:
        raise config_error(field, ConfigRule.WRONG_TYPE)
    if not low <= value <= high:
        raise config_error(field, ConfigRule.OUT_OF_RANGE)


def _check_str(field: str, value: object) -> str:
    if type(value) is not str:
        raise config_error(field, ConfigRule.WRONG_TYPE)
    return value


def _is_ip_address(value: str) -> bool:
    """An IPv4 or IPv6 address literal: never a name a resolver could answer falsely."""
    import ipaddress

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _check_strings(
    field: str, values: object, valid: Callable[[str], bool], rule: ConfigRule
) -> None:
    """A tuple of strings, each ``valid``; errors name the item (``worker.app_path[2]``)."""
    if type(values) is not tuple:
        raise config_error(field, ConfigRule.WRONG_TYPE)
    for index, item in enumerate(values):
        key = f"{_KEYS[field]}[{index}]"
        if type(item) is not str:
            raise WorkerConfigError(key, ConfigRule.WRONG_TYPE)
        if not valid(item):
            raise WorkerConfigError(key, rule)


def _check_enum(field: str, value: object, kind: type[enum.Enum]) -> None:
    if isinstance(value, kind):
        return
    raise config_error(
        field, ConfigRule.NOT_ONE_OF if isinstance(value, str) else ConfigRule.WRONG_TYPE
    )


FORBIDDEN_DIRECTORY: Final = "skeleton"
"""Seed 000's ``skeleton/`` rule: no runtime path goes through a directory of this name.

In the seed's framework the skeleton is the application's own tree, which runtime files
must never be written into; the rule is kept so that a configuration valid here is valid
there. Like ``..``, it applies to whole segments (``var/skeletons/x`` is fine)."""


def check_path_claims(claimed: Iterable[tuple[str, str]], canonical: Iterable[str]) -> None:
    """No claimed path equal to or nested in a canonical path or another field's path.

    Run on the configured text at load time, and again by ``start`` on the paths as
    they resolve through the root's symlinks (two different texts can name one file).
    """
    reserved = tuple(canonical)
    seen: list[tuple[str, str]] = []
    for field, path in claimed:
        if any(paths_overlap(path, other) for other in reserved):
            raise config_error(field, ConfigRule.RESERVED_PATH)
        if any(paths_overlap(path, other) for owner, other in seen if owner != field):
            raise config_error(field, ConfigRule.OVERLAPPING_PATH)
        seen.append((field, path))


def _check_path(field: str, value: object) -> str:
    path = _check_str(field, value)
    if not is_safe_relative_path(path) or FORBIDDEN_DIRECTORY in path.split("/")[:-1]:
        raise config_error(field, ConfigRule.UNSAFE_PATH)
    return path


@attrs.frozen(kw_only=True)
class ProcessTable:
    """One ``[[process]]`` table: seed 003's registration, written as configuration.

    ``index`` is its position in the file, for error keys (``process[2].target``). The
    rules of the values themselves (names, counts, the async flag against the entry's
    shape) are the manager's, applied when the entries are registered at ``start``.
    """

    index: int
    target: str
    name: str | None = None
    workers: int = 1
    enable_async: bool | None = None
    enabled: bool = True

    def __attrs_post_init__(self) -> None:
        prefix = f"process[{self.index}]."
        if type(self.target) is not str:
            raise WorkerConfigError(prefix + "target", ConfigRule.WRONG_TYPE)
        if not _is_target(self.target):
            raise WorkerConfigError(prefix + "target", ConfigRule.INVALID_TARGET)
        if self.name is not None and (type(self.name) is not str or not self.name):
            raise WorkerConfigError(prefix + "name", ConfigRule.WRONG_TYPE)
        if type(self.workers) is not int:
            raise WorkerConfigError(prefix + "workers", ConfigRule.WRONG_TYPE)
        if not 0 <= self.workers <= MAX_WORKERS:
            raise WorkerConfigError(prefix + "workers", ConfigRule.OUT_OF_RANGE)
        if self.enable_async is not None and type(self.enable_async) is not bool:
            raise WorkerConfigError(prefix + "enable_async", ConfigRule.WRONG_TYPE)
        if type(self.enabled) is not bool:
            raise WorkerConfigError(prefix + "enabled", ConfigRule.WRONG_TYPE)


@attrs.frozen(kw_only=True)
class PoolConfig:
    """The validated ``[worker]`` table; every default is seed 000's baseline.

    Constructing one validates it (see the module docstring): an invalid value raises
    :class:`WorkerConfigError` naming the dotted key and the rule; an invalid
    ``task_type`` raises :class:`WorkerLifecycleFailedError` (``worker-invalid-state``)
    instead, because seed 000 makes it a lifecycle-validation failure, not a config one.
    """

    workers: int = 4
    """Task-worker slots, 0..MAX_WORKERS; 0 only in a pool of process entries alone."""
    max_requests: int = 1000
    """Units of work a worker runs before it exits cleanly and is recycled."""
    task_type: TaskType = TaskType.QUEUE
    """Which kind of task source the workers serve."""
    task_source: str | None = None
    """``module:attr`` of the application's own task-source factory, or the name of an
    installed source (entry point of ``coretsia.worker.task_sources``); None: the one
    installed source serving ``task_type``."""
    source_options: tuple[tuple[str, OptionValue], ...] = ()
    """``[worker.source_options]``: scalars handed to the task source (its database...)."""
    before_hooks: tuple[str, ...] = ()
    """``[worker.hooks] before``: ``module:attr`` callables run before each task."""
    after_hooks: tuple[str, ...] = ()
    """``[worker.hooks] after``: run after each task, success or failure."""
    reset_hooks: tuple[str, ...] = ()
    """``[worker.hooks] reset``: run last in every unit of work (close connections...)."""
    app_path: tuple[str, ...] = (".",)
    """Root-relative directories prepended to each worker's ``sys.path``, in order."""
    driver: DriverRequest = DriverRequest.AUTO
    """How workers are spawned; availability is checked by the driver resolver."""
    control_transport: TransportRequest = TransportRequest.AUTO
    """``[worker.control] transport``: UNIX socket, loopback TCP, or the platform's pick."""
    tcp_host: str = LOOPBACK_HOST
    """``[worker.tcp] host``: always 127.0.0.1; present so a file can say so explicitly."""
    tcp_port: int = 9327
    """``[worker.tcp] port``: explicit, 1..65535 (an ephemeral port 0 is never allowed)."""
    socket_path: str = "var/tmp/worker.sock"
    """The UNIX control socket, root-relative."""
    state_path: str = "var/tmp/worker.state.json"
    """The public, redacted state file, root-relative."""
    stop_flag_path: str = "var/tmp/worker.stop"
    """The stop-signal file, root-relative."""
    start_timeout_ms: int = 10000
    """Budget for every slot to become ready."""
    stop_timeout_ms: int = 10000
    """Budget of the cooperative stop phase."""
    force_kill_timeout_ms: int = 1000
    """Budget of the terminate/reap phase, and again of the kill/reap phase."""
    debug: bool = False
    """UNSAFE opt-in: a failing worker writes its traceback (which may hold data) to stderr."""
    processes: tuple[ProcessTable, ...] = ()
    """``[[process]]``: seed 003's entries, registered at ``start`` beside the task workers."""
    process_modules: tuple[str, ...] = ()
    """Modules whose ``@process`` classes ``start`` discovers (imported, never scanned)."""
    ipc_type: str = "none"
    """Seed 003's pool-wide IPC mode for process entries: none, unixsock or msgqueue."""
    msg_queue_key: int = 0
    """System V key of the ``msgqueue`` mode's queue; 0 makes a private queue."""
    event_loop: str = "asyncio"
    """What async process entries run under: asyncio, or trio."""
    respawn_interval_ms: int = 100
    """Least time between two spawns of one process entry's slot (a returning entry
    never spins the CPU); the one departure from seed 003's "no backoff"."""
    restart_intensity: int = 0
    """Most entry replacements within ``restart_period_ms`` before the pool fails
    (``worker-restart-intensity-exceeded``); 0: unlimited, as seed 003 has it."""
    restart_period_ms: int = 60000
    """The window of ``restart_intensity``."""
    restart_backoff_max_ms: int = 0
    """Cap of an entry's exponential respawn back-off; 0: off (only the interval)."""
    metrics_port: int = 0
    """The supervisor's Prometheus text endpoint (the ``prometheus`` extra); 0: off."""
    metrics_host: str = LOOPBACK_HOST
    """The address the endpoint binds: loopback unless another IP address is configured
    (Kubernetes scrapes the pod's IP)."""
    telemetry: TelemetryMode = TelemetryMode.OFF
    """``otel``: the supervisor and every worker record spans and metrics through
    OpenTelemetry (the ``otel`` extra); ``off`` imports none of it."""

    @property
    def state_tmp_path(self) -> str:
        """Where the state file is written before its atomic rename (not configurable)."""
        return self.state_path + ".tmp"

    def __attrs_post_init__(self) -> None:
        """Validate every field; the first broken rule, in field order, is raised.

        ``task_type`` is checked last so that a file with both a config error and a bad
        task type reports the config error (exit 6), which is the one the operator fixes.
        """
        _check_int("workers", self.workers, 0, MAX_WORKERS)
        _check_int("max_requests", self.max_requests, 1, MAX_REQUESTS)
        if self.task_source is not None:
            target = _check_str("task_source", self.task_source)
            if not _is_target(target) and not _SOURCE_NAME.fullmatch(target):
                raise config_error("task_source", ConfigRule.INVALID_TARGET)
        self._check_source_options()
        self._check_hooks()
        self._check_app_path()
        _check_enum("driver", self.driver, DriverRequest)
        _check_enum("control_transport", self.control_transport, TransportRequest)
        if _check_str("tcp_host", self.tcp_host) != LOOPBACK_HOST:
            raise config_error("tcp_host", ConfigRule.NOT_LOOPBACK)
        _check_int("tcp_port", self.tcp_port, 1, 65535)
        self._check_runtime_paths()
        for field in ("start_timeout_ms", "stop_timeout_ms", "force_kill_timeout_ms"):
            _check_int(field, getattr(self, field), 1, MAX_TIMEOUT_MS)
        if type(self.debug) is not bool:
            raise config_error("debug", ConfigRule.WRONG_TYPE)
        self._check_processes()
        _check_int("metrics_port", self.metrics_port, 0, 65535)
        if not _is_ip_address(_check_str("metrics_host", self.metrics_host)):
            raise config_error("metrics_host", ConfigRule.NOT_ONE_OF)
        _check_enum("telemetry", self.telemetry, TelemetryMode)
        if not isinstance(self.task_type, TaskType):
            # Seed 000: an invalid or missing task_type is a Worker-owned lifecycle
            # validation failure, not a configuration error.
            raise WorkerLifecycleFailedError(Reason.INVALID_STATE)

    def _check_processes(self) -> None:
        """The process-entry settings. (That ``start`` needs at least one slot of either
        kind is checked once the entries are registered: ``generation_spec``.)"""
        if type(self.processes) is not tuple or not all(
            isinstance(table, ProcessTable) for table in self.processes
        ):
            raise WorkerConfigError("process", ConfigRule.WRONG_TYPE)
        _check_strings(
            "process_modules",
            self.process_modules,
            lambda module: re.fullmatch(_DOTTED, module) is not None,
            ConfigRule.INVALID_TARGET,
        )
        for field, choices in (("ipc_type", IPC_TYPES), ("event_loop", EVENT_LOOPS)):
            if _check_str(field, getattr(self, field)) not in choices:
                raise config_error(field, ConfigRule.NOT_ONE_OF)
        _check_int("msg_queue_key", self.msg_queue_key, 0, MAX_MSG_QUEUE_KEY)
        _check_int(
            "respawn_interval_ms", self.respawn_interval_ms, MIN_RESPAWN_INTERVAL_MS, MAX_TIMEOUT_MS
        )
        _check_int("restart_intensity", self.restart_intensity, 0, MAX_WORKERS * 1000)
        _check_int("restart_period_ms", self.restart_period_ms, 1, MAX_TIMEOUT_MS)
        _check_int("restart_backoff_max_ms", self.restart_backoff_max_ms, 0, MAX_TIMEOUT_MS)

    def _check_source_options(self) -> None:
        if type(self.source_options) is not tuple or len(self.source_options) > MAX_OPTIONS:
            raise config_error("source_options", ConfigRule.WRONG_TYPE)
        for key, value in self.source_options:
            if type(key) is not str or not _OPTION_KEY.fullmatch(key):
                raise config_error("source_options", ConfigRule.UNKNOWN_KEY)
            if type(value) not in (str, int, bool):
                raise WorkerConfigError(f"worker.source_options.{key}", ConfigRule.WRONG_TYPE)
            if type(value) is str and len(value) > MAX_OPTION_CHARS:
                raise WorkerConfigError(f"worker.source_options.{key}", ConfigRule.OUT_OF_RANGE)

    def _check_hooks(self) -> None:
        for kind in HOOK_KINDS:
            field = f"{kind}_hooks"
            hooks = getattr(self, field)
            if type(hooks) is tuple and len(hooks) > MAX_HOOKS:
                raise config_error(field, ConfigRule.WRONG_TYPE)
            _check_strings(field, hooks, _is_target, ConfigRule.INVALID_TARGET)

    @property
    def options(self) -> dict[str, OptionValue]:
        """``source_options`` as a mapping."""
        return dict(self.source_options)

    def _check_app_path(self) -> None:
        _check_strings(
            "app_path",
            self.app_path,
            lambda item: item == "." or is_safe_relative_path(item),
            ConfigRule.UNSAFE_PATH,
        )

    def _check_runtime_paths(self) -> None:
        """Each path safe; none equal to or nested in another or a canonical path.

        ``state_tmp_path`` is derived from ``state_path``, so its failures are reported
        on ``worker.state_path``.
        """
        _check_path("socket_path", self.socket_path)
        _check_path("state_path", self.state_path)
        _check_path("stop_flag_path", self.stop_flag_path)
        if not is_safe_relative_path(self.state_tmp_path):  # 4 characters longer
            raise config_error("state_path", ConfigRule.UNSAFE_PATH)
        check_path_claims(self.claimed_paths, CANONICAL_PATHS)

    @property
    def claimed_paths(self) -> tuple[tuple[str, str], ...]:
        """``(field, path)`` of every file the pool writes besides the canonical ones."""
        return (
            ("socket_path", self.socket_path),
            ("state_path", self.state_path),
            ("state_path", self.state_tmp_path),
            ("stop_flag_path", self.stop_flag_path),
        )

    def to_generation_dict(self) -> dict[str, object]:
        """Every field as plain JSON values (enums as values, tuples as lists), in order.

        This is the configuration part of the generation snapshot; the derived
        ``state_tmp_path`` is not a field and is not included.
        """
        out: dict[str, object] = {}
        for field in attrs.fields(PoolConfig):
            if field.name in ("processes", "process_modules"):
                continue  # registered at start: the generation carries the snapshot
            value = getattr(self, field.name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif field.name == "source_options":
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[field.name] = value
        return out


def _check_keys(
    table: Mapping[Any, object], allowed: Mapping[str, object] | frozenset[str], prefix: str
) -> None:
    """Reject the first key (in file order) that ``allowed`` does not define."""
    for key in table:
        if not isinstance(key, str) or key not in allowed:
            raise WorkerConfigError(f"{prefix}{key}", ConfigRule.UNKNOWN_KEY)


def _subtable(data: Mapping[str, object], name: str) -> Mapping[Any, object]:
    table = data.get(name, {})
    if not isinstance(table, Mapping):
        raise WorkerConfigError(f"worker.{name}", ConfigRule.WRONG_TYPE)
    return table


def parse_config(
    data: Mapping[str, object], processes: tuple[ProcessTable, ...] = ()
) -> PoolConfig:
    """Validate the content of the ``[worker]`` table, already parsed from TOML.

    ``processes`` are the file's ``[[process]]`` tables, already parsed. (The slot-count
    rule, ``workers = 0`` needs an enabled entry and 1,024 slots at most in total, spans
    the registrations too, so ``generation_spec`` checks it.)

    Missing keys take their defaults. Strings naming an enum member become that member
    (``driver = "pcntl"`` becomes :attr:`DriverRequest.FORK`); anything else is passed
    through unchanged, so :class:`PoolConfig` reports it with the right key and rule.
    """
    if not isinstance(data, Mapping):
        raise WorkerConfigError("worker", ConfigRule.WRONG_TYPE)
    _check_keys(data, _WORKER_KEYS, "worker.")
    control = _subtable(data, "control")
    _check_keys(control, _CONTROL_KEYS, "worker.control.")
    tcp = _subtable(data, "tcp")
    _check_keys(tcp, _TCP_KEYS, "worker.tcp.")

    hooks = _subtable(data, "hooks")
    _check_keys(hooks, frozenset(HOOK_KINDS), "worker.hooks.")
    options = _subtable(data, "source_options")

    nested = ("control", "tcp", "hooks", "source_options")
    fields: dict[str, Any] = {k: v for k, v in data.items() if k not in nested}
    fields.update({_CONTROL_KEYS[k]: v for k, v in control.items()})
    fields.update({_TCP_KEYS[k]: v for k, v in tcp.items()})
    fields["source_options"] = tuple(options.items())
    if type(fields.get("process_modules")) is list:
        fields["process_modules"] = tuple(fields["process_modules"])
    for kind in HOOK_KINDS:
        value = hooks.get(kind, [])
        fields[f"{kind}_hooks"] = tuple(value) if type(value) is list else value

    for field, members in _ENUM_FIELDS.items():
        value = fields.get(field)
        if type(value) is str and value in members:
            fields[field] = members[value]
    if type(fields.get("app_path")) is list:
        fields["app_path"] = tuple(fields["app_path"])
    return PoolConfig(**fields, processes=processes)


def parse_process_tables(tables: object) -> tuple[ProcessTable, ...]:
    """Validate the ``[[process]]`` array of tables (unknown keys, types, ranges)."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise WorkerConfigError("process", ConfigRule.WRONG_TYPE)
    parsed = []
    for index, table in enumerate(tables):
        _check_keys(table, _PROCESS_KEYS, f"process[{index}].")
        if "target" not in table:
            raise WorkerConfigError(f"process[{index}].target", ConfigRule.WRONG_TYPE)
        parsed.append(ProcessTable(index=index, **table))
    return tuple(parsed)


def load_config(root: pathlib.Path, config_file: str | None = None) -> PoolConfig:
    """Read and validate the configuration file of the project at ``root``.

    ``config_file`` is relative to ``root`` (``--config``); when it is None the default
    ``coretsia.toml`` is read, and its absence simply means "all defaults". A file that
    was asked for explicitly must exist.

    The top level may hold only ``[worker]`` and ``[[process]]`` (seed 003's named pool
    entries, registered at ``start`` beside the task workers).
    """
    if config_file is not None and not is_safe_relative_path(config_file):
        raise WorkerConfigError(FILE_KEY, ConfigRule.UNSAFE_PATH)
    path = root / (CONFIG_FILE if config_file is None else config_file)
    try:
        with path.open("rb") as stream:
            raw = stream.read()
    except (FileNotFoundError, NotADirectoryError) as exc:
        if config_file is None and not path.is_symlink():
            return PoolConfig()
        # A dangling symlink at the default name is a broken file, not an absent one.
        rule = ConfigRule.FILE_MISSING if config_file is not None else ConfigRule.FILE_UNREADABLE
        raise WorkerConfigError(FILE_KEY, rule) from exc
    except OSError as exc:  # a directory, no permission, an I/O error
        raise WorkerConfigError(FILE_KEY, ConfigRule.FILE_UNREADABLE) from exc
    try:
        document: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        # `from None`: a UnicodeDecodeError carries the file's bytes in `.object`.
        raise WorkerConfigError(FILE_KEY, ConfigRule.NOT_TOML) from None
    _check_keys(document, _TOP_LEVEL, "")
    processes = parse_process_tables(document.get("process", []))
    worker = document.get("worker", {})
    if not isinstance(worker, dict):
        raise WorkerConfigError("worker", ConfigRule.WRONG_TYPE)
    return parse_config(worker, processes)
