"""Loading and validating coretsia.toml into PoolConfig, a tree of records.

Every rule of docs/configuration.md is reached here through a real file on disk (or
parse_config for the table alone), with the exact dotted key and rule asserted, and no
error ever carries the offending value.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

import attrs
import pytest

from coretsia.supervisor.config import (
    CONFIG_FILE,
    Budgets,
    ControlSettings,
    Hooks,
    Observability,
    PoolConfig,
    ProcessSettings,
    ProcessTable,
    RuntimePaths,
    TaskType,
    TcpSettings,
    TelemetryMode,
    WorkerSettings,
    load_config,
    parse_config,
)
from coretsia.supervisor.task_sources import generation_spec
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerLifecycleFailedError
from coretsia.worker_protocol.exit_codes import ExitCode
from coretsia.worker_protocol.vocabulary import ContainmentRequest, DriverRequest, TransportRequest

SECRET = "s3cr3t-value"

FULL_FILE = """\
[worker]
workers = 8
max_requests = 500
task_type = "http"
task_source = "myapp.sources:make_source"
app_path = [".", "src", "lib/vendored"]
driver = "proc"
socket_path = "run/ctl.sock"
state_path = "run/state.json"
stop_flag_path = "run/stop"
start_timeout_ms = 20000
stop_timeout_ms = 30000
force_kill_timeout_ms = 2000
heartbeat_timeout_ms = 3000
debug = true
process_modules = ["myapp.jobs"]
ipc_type = "unixsock"
msg_queue_key = 4242
event_loop = "trio"
respawn_interval_ms = 250
restart_intensity = 5
restart_period_ms = 30000
restart_backoff_max_ms = 8000
telemetry = "otel"

[worker.control]
transport = "tcp"

[worker.tcp]
host = "127.0.0.1"
port = 19327

[[process]]
name = "mailer"
target = "myapp.jobs:mail"
workers = 2
enable_async = false

[[process]]
target = "myapp.jobs:Heartbeat"
enabled = false
"""


def _write(root: Path, body: str | bytes, name: str = CONFIG_FILE) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(body, str):
        path.write_text(body, encoding="utf-8")
    else:
        path.write_bytes(body)
    return path


def _config_error(root: Path, body: str | bytes) -> WorkerConfigError:
    _write(root, body)
    with pytest.raises(WorkerConfigError) as info:
        load_config(root)
    return info.value


def _assert_no_secret(error: BaseException, secret: str = SECRET) -> None:
    """Neither the message, the repr, the args nor the whole printed traceback holds it."""
    assert secret not in str(error)
    assert secret not in repr(error)
    assert all(secret not in str(arg) for arg in error.args)
    assert secret not in "".join(traceback.format_exception(error))


# --- defaults -------------------------------------------------------------------------


def test_no_file_means_every_default(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == PoolConfig()
    assert config.worker.workers == 4
    assert config.worker.max_requests == 1000
    assert config.worker.task_type is TaskType.QUEUE
    assert config.worker.task_source is None
    assert config.worker.app_path == (".",)
    assert config.worker.driver is DriverRequest.AUTO
    assert config.control.transport is TransportRequest.AUTO
    assert config.tcp.host == "127.0.0.1"
    assert config.tcp.port == 9327
    assert config.paths.socket_path == "var/tmp/worker.sock"
    assert config.paths.state_path == "var/tmp/worker.state.json"
    assert config.paths.state_tmp_path == "var/tmp/worker.state.json.tmp"
    assert config.paths.stop_flag_path == "var/tmp/worker.stop"
    assert config.budgets.start_timeout_ms == 10000
    assert config.budgets.stop_timeout_ms == 10000
    assert config.budgets.force_kill_timeout_ms == 1000
    assert config.budgets.heartbeat_timeout_ms == 0  # off
    assert config.observability.debug is False
    assert config.observability.telemetry is TelemetryMode.OFF


@pytest.mark.parametrize("body", ["", "# nothing here\n", "[worker]\n", "[worker.tcp]\n"])
def test_an_empty_file_or_table_means_every_default(tmp_path: Path, body: str) -> None:
    _write(tmp_path, body)
    assert load_config(tmp_path) == PoolConfig()


def test_a_missing_root_is_no_file_too(tmp_path: Path) -> None:
    assert load_config(tmp_path / "not-there") == PoolConfig()


# --- a full file ----------------------------------------------------------------------


def test_a_full_valid_file(tmp_path: Path) -> None:
    _write(tmp_path, FULL_FILE)
    config = load_config(tmp_path)
    assert config == PoolConfig(
        worker=WorkerSettings(
            workers=8,
            max_requests=500,
            task_type=TaskType.HTTP,
            task_source="myapp.sources:make_source",
            app_path=(".", "src", "lib/vendored"),
            driver=DriverRequest.PROC,
        ),
        control=ControlSettings(transport=TransportRequest.TCP),
        tcp=TcpSettings(host="127.0.0.1", port=19327),
        paths=RuntimePaths(
            socket_path="run/ctl.sock", state_path="run/state.json", stop_flag_path="run/stop"
        ),
        budgets=Budgets(
            start_timeout_ms=20000,
            stop_timeout_ms=30000,
            force_kill_timeout_ms=2000,
            heartbeat_timeout_ms=3000,
        ),
        observability=Observability(debug=True, telemetry=TelemetryMode.OTEL),
        processes=ProcessSettings(
            entries=(
                ProcessTable(
                    name="mailer", target="myapp.jobs:mail", workers=2, enable_async=False
                ),
                ProcessTable(target="myapp.jobs:Heartbeat", enabled=False),
            ),
            process_modules=("myapp.jobs",),
            ipc_type="unixsock",
            msg_queue_key=4242,
            event_loop="trio",
            respawn_interval_ms=250,
            restart_intensity=5,
            restart_period_ms=30000,
            restart_backoff_max_ms=8000,
        ),
    )
    assert config.paths.state_tmp_path == "run/state.json.tmp"


def test_an_explicit_config_file_relative_to_the_root(tmp_path: Path) -> None:
    _write(tmp_path, "[worker]\nworkers = 1\n")  # the default file is not read
    _write(tmp_path, "[worker]\nworkers = 2\n", "deploy/prod.toml")
    assert load_config(tmp_path, "deploy/prod.toml").worker.workers == 2


def test_bounds_are_inclusive(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "[worker]\nworkers = 1024\nmax_requests = 10_000_000\nstart_timeout_ms = 3_600_000\n"
        "stop_timeout_ms = 1\nforce_kill_timeout_ms = 1\napp_path = []\n"
        "[worker.tcp]\nport = 65535\n",
    )
    config = load_config(tmp_path)
    worker, budgets = config.worker, config.budgets
    assert (worker.workers, worker.max_requests, config.tcp.port) == (1024, 10_000_000, 65535)
    assert (budgets.start_timeout_ms, budgets.stop_timeout_ms) == (3_600_000, 1)
    assert worker.app_path == ()
    assert parse_config({"workers": 1, "max_requests": 1, "tcp": {"port": 1}}).tcp.port == 1


@pytest.mark.parametrize("value", [0, 100, 3_600_000])
def test_heartbeat_timeout_is_off_or_within_its_bounds(value: int) -> None:
    """0 turns the heartbeat off; otherwise 100 ms to an hour, both included."""
    assert parse_config({"heartbeat_timeout_ms": value}).budgets.heartbeat_timeout_ms == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("auto", DriverRequest.AUTO),
        ("fork", DriverRequest.FORK),
        ("proc", DriverRequest.PROC),
        ("pcntl", DriverRequest.FORK),
    ],
)
def test_driver_values_and_the_pcntl_alias(value: str, expected: DriverRequest) -> None:
    config = parse_config({"driver": value})
    assert config.worker.driver is expected
    assert config.to_generation_dict()["driver"] == expected.value  # "pcntl" never survives


@pytest.mark.parametrize("level", ["auto", "namespace", "cgroup", "process"])
def test_containment_levels(level: str) -> None:
    """Each level is accepted as written and travels into the generation; auto by default."""
    config = parse_config({"containment": level})
    assert config.worker.containment is ContainmentRequest(level)
    assert config.to_generation_dict()["containment"] == level
    assert PoolConfig().worker.containment is ContainmentRequest.AUTO


@pytest.mark.parametrize("transport", ["auto", "unix", "tcp"])
def test_control_transports(transport: str) -> None:
    config = parse_config({"control": {"transport": transport}})
    assert config.control.transport is TransportRequest(transport)


def test_generation_dict_is_plain_json_of_every_field(tmp_path: Path) -> None:
    _write(tmp_path, FULL_FILE)
    config = load_config(tmp_path)
    snapshot = config.to_generation_dict()
    # The launcher's flat keys; process entries are not here (the generation carries the
    # manager's snapshot instead).
    assert set(snapshot) == {
        "workers", "max_requests", "task_type", "task_source", "source_options",
        "before_hooks", "after_hooks", "reset_hooks", "app_path", "driver", "containment",
        "control_transport", "tcp_host", "tcp_port", "socket_path", "state_path",
        "stop_flag_path", "start_timeout_ms", "stop_timeout_ms", "force_kill_timeout_ms",
        "heartbeat_timeout_ms", "debug", "ipc_type", "msg_queue_key", "event_loop",
        "respawn_interval_ms", "restart_intensity", "restart_period_ms",
        "restart_backoff_max_ms", "metrics_port", "metrics_host", "telemetry",
    }  # fmt: skip
    assert snapshot["tcp_port"] == 19327
    assert snapshot["stop_timeout_ms"] == 30000
    assert snapshot["heartbeat_timeout_ms"] == 3000
    assert snapshot["restart_backoff_max_ms"] == 8000
    assert snapshot["task_type"] == "http"
    assert snapshot["driver"] == "proc"
    assert snapshot["control_transport"] == "tcp"
    assert snapshot["telemetry"] == "otel"
    assert snapshot["app_path"] == [".", "src", "lib/vendored"]
    assert all(type(v) in (int, str, bool, list, dict, type(None)) for v in snapshot.values())
    assert json.loads(json.dumps(snapshot)) == snapshot
    assert PoolConfig().to_generation_dict()["task_source"] is None


def test_the_value_is_frozen_and_validates_when_built_in_code() -> None:
    """Records built in code obey the value rules with the same keys (types are mypy's)."""
    config = PoolConfig()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.worker.workers = 2  # type: ignore[misc]
    with pytest.raises(WorkerConfigError) as info:
        attrs.evolve(config.tcp, port=0)
    assert (info.value.key, info.value.rule) == ("worker.tcp.port", ConfigRule.OUT_OF_RANGE)
    with pytest.raises(WorkerConfigError) as info:
        WorkerSettings(app_path=("src", "/srv"))
    assert (info.value.key, info.value.rule) == ("worker.app_path[1]", ConfigRule.UNSAFE_PATH)
    with pytest.raises(WorkerConfigError) as info:
        Hooks(reset=("not a target",))
    assert (info.value.key, info.value.rule) == ("worker.hooks.reset[0]", ConfigRule.INVALID_TARGET)
    with pytest.raises(WorkerConfigError) as info:
        RuntimePaths(stop_flag_path="var/tmp/worker.sock")
    assert (info.value.key, info.value.rule) == (
        "worker.stop_flag_path",
        ConfigRule.OVERLAPPING_PATH,
    )
    with pytest.raises(WorkerConfigError) as info:
        ProcessSettings(entries=(ProcessTable(target="jobs:run"), ProcessTable(target="x")))
    assert (info.value.key, info.value.rule) == ("process[1].target", ConfigRule.INVALID_TARGET)


# --- the file as a whole ---------------------------------------------------------------


def _file_error(root: Path, config_file: str | None) -> WorkerConfigError:
    with pytest.raises(WorkerConfigError) as info:
        load_config(root, config_file)
    assert info.value.key == "config"
    return info.value


def test_an_explicit_file_that_is_missing(tmp_path: Path) -> None:
    assert _file_error(tmp_path, "prod.toml").rule is ConfigRule.FILE_MISSING
    assert _file_error(tmp_path, CONFIG_FILE).rule is ConfigRule.FILE_MISSING
    _write(tmp_path, "", "not-a-dir")
    assert _file_error(tmp_path, "not-a-dir/prod.toml").rule is ConfigRule.FILE_MISSING


@pytest.mark.parametrize(
    "config_file",
    ["/etc/coretsia.toml", "../coretsia.toml", "conf/../coretsia.toml", "", "a b.toml",
     "C:/x.toml", "conf\\x.toml", "@x.toml", "./coretsia.toml"],
)  # fmt: skip
def test_an_unsafe_config_path(tmp_path: Path, config_file: str) -> None:
    assert _file_error(tmp_path, config_file).rule is ConfigRule.UNSAFE_PATH


def test_a_directory_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).mkdir()
    assert _file_error(tmp_path, None).rule is ConfigRule.FILE_UNREADABLE
    assert _file_error(tmp_path, CONFIG_FILE).rule is ConfigRule.FILE_UNREADABLE


def test_a_dangling_symlink_at_the_default_name_is_not_absent(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).symlink_to(tmp_path / "gone.toml")
    assert _file_error(tmp_path, None).rule is ConfigRule.FILE_UNREADABLE


def test_a_symlinked_config_is_followed(tmp_path: Path) -> None:
    _write(tmp_path, "[worker]\nworkers = 3\n", "shared/coretsia.toml")
    (tmp_path / CONFIG_FILE).symlink_to(tmp_path / "shared" / CONFIG_FILE)
    assert load_config(tmp_path).worker.workers == 3


def test_a_symlink_loop_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).symlink_to(tmp_path / CONFIG_FILE)
    assert _file_error(tmp_path, None).rule is ConfigRule.FILE_UNREADABLE
    assert _file_error(tmp_path, CONFIG_FILE).rule is ConfigRule.FILE_UNREADABLE


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root reads a 0000 file anyway"
)
def test_a_file_without_permission_is_unreadable(tmp_path: Path) -> None:
    _write(tmp_path, "[worker]\n").chmod(0)
    assert _file_error(tmp_path, None).rule is ConfigRule.FILE_UNREADABLE


@pytest.mark.parametrize(
    "body",
    [
        "[worker\n",
        "workers = \n",
        "[worker]\nworkers = 1\nworkers = 2\n",  # TOML forbids a repeated key
        b"[worker]\nworkers = 1\n\xff\xfe\n",  # not UTF-8
        f"[worker]\nsocket_path = '{SECRET}\n",  # unterminated string holding a value
        f'[worker]\nsocket_path = "{SECRET}"\x00\n'.encode(),
        f'[worker]\nsocket_path = "{SECRET}"\n'.encode() + b"\xc3\x28",
    ],
)
def test_not_toml(tmp_path: Path, body: str | bytes) -> None:
    error = _config_error(tmp_path, body)
    assert (error.key, error.rule) == ("config", ConfigRule.NOT_TOML)
    assert error.__cause__ is None  # a UnicodeDecodeError would carry the file's bytes
    assert error.__suppress_context__
    _assert_no_secret(error)


# --- top level -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("[tool.black]\nline-length = 100\n", "tool"),
        ("workers = 4\n", "workers"),  # a [worker] key written above the table
        ("[proc]\ncommand = ['python']\n", "proc"),
        ("[worker]\n[workers]\n", "workers"),
    ],
)
def test_only_worker_and_process_at_top_level(tmp_path: Path, body: str, key: str) -> None:
    error = _config_error(tmp_path, body)
    assert (error.key, error.rule) == (key, ConfigRule.UNKNOWN_KEY)


def test_process_is_an_array_of_tables(tmp_path: Path) -> None:
    for body in ("process = 1\n", "[process]\nname = 'a'\n", "process = [1]\n"):
        error = _config_error(tmp_path, body)
        assert (error.key, error.rule) == ("process", ConfigRule.WRONG_TYPE)


@pytest.mark.parametrize(
    ("table", "key", "rule"),
    [
        ("name = 'a'\n", "process[0].target", ConfigRule.WRONG_TYPE),
        ("target = 'jobs:run'\nanything = 1\n", "process[0].anything", ConfigRule.UNKNOWN_KEY),
        ("target = 3\n", "process[0].target", ConfigRule.WRONG_TYPE),
        ("target = 'jobs.run'\n", "process[0].target", ConfigRule.INVALID_TARGET),
        ("target = 'jobs:run'\nname = ''\n", "process[0].name", ConfigRule.WRONG_TYPE),
        ("target = 'jobs:run'\nworkers = '2'\n", "process[0].workers", ConfigRule.WRONG_TYPE),
        ("target = 'jobs:run'\nworkers = 1025\n", "process[0].workers", ConfigRule.OUT_OF_RANGE),
        ("target = 'jobs:run'\nworkers = -1\n", "process[0].workers", ConfigRule.OUT_OF_RANGE),
        (
            "target = 'jobs:run'\nenable_async = 1\n",
            "process[0].enable_async",
            ConfigRule.WRONG_TYPE,
        ),
        ("target = 'jobs:run'\nenabled = 'no'\n", "process[0].enabled", ConfigRule.WRONG_TYPE),
    ],
)
def test_process_table_rules(tmp_path: Path, table: str, key: str, rule: ConfigRule) -> None:
    error = _config_error(tmp_path, "[[process]]\ntarget = 'jobs:ok'\n[[process]]\n" + table)
    assert (error.key, error.rule) == (key.replace("[0]", "[1]"), rule)


@pytest.mark.parametrize(
    ("line", "key", "rule"),
    [
        ("process_modules = 'jobs'", "worker.process_modules", ConfigRule.WRONG_TYPE),
        ("process_modules = [1]", "worker.process_modules[0]", ConfigRule.WRONG_TYPE),
        ("process_modules = ['jobs/x']", "worker.process_modules[0]", ConfigRule.INVALID_TARGET),
        ("ipc_type = 'socket'", "worker.ipc_type", ConfigRule.NOT_ONE_OF),
        ("ipc_type = 1", "worker.ipc_type", ConfigRule.WRONG_TYPE),
        ("event_loop = 'curio'", "worker.event_loop", ConfigRule.NOT_ONE_OF),
        ("msg_queue_key = -1", "worker.msg_queue_key", ConfigRule.OUT_OF_RANGE),
        ("msg_queue_key = 2147483648", "worker.msg_queue_key", ConfigRule.OUT_OF_RANGE),
        ("respawn_interval_ms = 9", "worker.respawn_interval_ms", ConfigRule.OUT_OF_RANGE),
        ("restart_intensity = -1", "worker.restart_intensity", ConfigRule.OUT_OF_RANGE),
        ("restart_period_ms = 0", "worker.restart_period_ms", ConfigRule.OUT_OF_RANGE),
        ("restart_backoff_max_ms = true", "worker.restart_backoff_max_ms", ConfigRule.WRONG_TYPE),
    ],
)
def test_process_pool_settings(tmp_path: Path, line: str, key: str, rule: ConfigRule) -> None:
    error = _config_error(tmp_path, f"[worker]\n{line}\n")
    assert (error.key, error.rule) == (key, rule)


def test_no_task_workers_needs_a_process_entry(tmp_path: Path) -> None:
    """The rule spans the file and the registration, so ``start`` checks it at the end."""
    _write(tmp_path, "[worker]\nworkers = 0\n")
    config = load_config(tmp_path)  # no entries yet: registration decides
    with pytest.raises(WorkerConfigError) as info:
        generation_spec(tmp_path, config)
    assert (info.value.key, info.value.rule) == ("worker.workers", ConfigRule.OUT_OF_RANGE)
    _write(tmp_path, "[worker]\nworkers = 0\nprocess_modules = ['jobs']\n")
    assert load_config(tmp_path).processes.process_modules == ("jobs",)


@pytest.mark.parametrize("body", ["worker = 4\n", "worker = [1]\n", "worker = 'queue'\n"])
def test_worker_must_be_a_table(tmp_path: Path, body: str) -> None:
    error = _config_error(tmp_path, body)
    assert (error.key, error.rule) == ("worker", ConfigRule.WRONG_TYPE)


def test_parse_config_wants_a_mapping() -> None:
    with pytest.raises(WorkerConfigError) as info:
        parse_config([("workers", 4)])  # type: ignore[arg-type]
    assert (info.value.key, info.value.rule) == ("worker", ConfigRule.WRONG_TYPE)


# --- every rule of every key -----------------------------------------------------------

LONG = "a/" * 99 + "bc"  # 200 characters: the longest safe path
CASES: list[tuple[str, str, ConfigRule]] = [
    # unknown keys, at each level; the seed's proc.command is not configurable
    ("stop_timeout = 5000", "worker.stop_timeout", ConfigRule.UNKNOWN_KEY),
    ("[worker.proc]\ncommand = ['python']", "worker.proc", ConfigRule.UNKNOWN_KEY),
    ("[worker.control]\ntransprot = 'unix'", "worker.control.transprot", ConfigRule.UNKNOWN_KEY),
    ("[worker.tcp]\nhost = '127.0.0.1'\nbind = 1", "worker.tcp.bind", ConfigRule.UNKNOWN_KEY),
    ("[worker.control.tcp]", "worker.control.tcp", ConfigRule.UNKNOWN_KEY),
    ("control = 'unix'", "worker.control", ConfigRule.WRONG_TYPE),
    ("tcp = 9327", "worker.tcp", ConfigRule.WRONG_TYPE),
    # workers
    ("workers = '4'", "worker.workers", ConfigRule.WRONG_TYPE),
    ("workers = true", "worker.workers", ConfigRule.WRONG_TYPE),
    ("workers = 4.0", "worker.workers", ConfigRule.WRONG_TYPE),
    ("workers = -1", "worker.workers", ConfigRule.OUT_OF_RANGE),
    ("workers = 1025", "worker.workers", ConfigRule.OUT_OF_RANGE),
    # max_requests
    ("max_requests = '1000'", "worker.max_requests", ConfigRule.WRONG_TYPE),
    ("max_requests = false", "worker.max_requests", ConfigRule.WRONG_TYPE),
    ("max_requests = 0", "worker.max_requests", ConfigRule.OUT_OF_RANGE),
    ("max_requests = 10_000_001", "worker.max_requests", ConfigRule.OUT_OF_RANGE),
    # task_source
    ("task_source = 1", "worker.task_source", ConfigRule.WRONG_TYPE),
    ("task_source = ['a:b']", "worker.task_source", ConfigRule.WRONG_TYPE),
    ("task_source = 'my app'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = '-sqlite'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("hooks.before = ['not a target']", "worker.hooks.before[0]", ConfigRule.INVALID_TARGET),
    ("hooks.reset = [1]", "worker.hooks.reset[0]", ConfigRule.WRONG_TYPE),
    ("hooks.after = 'mod:fn'", "worker.hooks.after", ConfigRule.WRONG_TYPE),
    ("hooks.during = []", "worker.hooks.during", ConfigRule.UNKNOWN_KEY),
    ("source_options.database = 1.5", "worker.source_options.database", ConfigRule.WRONG_TYPE),
    ("task_source = 'a:b:c'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = '1a:b'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = 'a:1b'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = 'a..b:c'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = 'a.:c'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = 'a:'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = ''", "worker.task_source", ConfigRule.INVALID_TARGET),
    ('task_source = "a:b\\n"', "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = 'a : b'", "worker.task_source", ConfigRule.INVALID_TARGET),
    ("task_source = 'a-b:c'", "worker.task_source", ConfigRule.INVALID_TARGET),
    (f"task_source = 'a:{'b' * 300}'", "worker.task_source", ConfigRule.INVALID_TARGET),
    # app_path
    ("app_path = 'src'", "worker.app_path", ConfigRule.WRONG_TYPE),
    ("app_path = [1]", "worker.app_path[0]", ConfigRule.WRONG_TYPE),
    ("app_path = ['.', ['src']]", "worker.app_path[1]", ConfigRule.WRONG_TYPE),
    ("app_path = ['.', '/srv/app']", "worker.app_path[1]", ConfigRule.UNSAFE_PATH),
    ("app_path = ['../lib']", "worker.app_path[0]", ConfigRule.UNSAFE_PATH),
    ("app_path = ['./src']", "worker.app_path[0]", ConfigRule.UNSAFE_PATH),
    ("app_path = ['']", "worker.app_path[0]", ConfigRule.UNSAFE_PATH),
    ("app_path = ['src/']", "worker.app_path[0]", ConfigRule.UNSAFE_PATH),
    # driver
    ("driver = 1", "worker.driver", ConfigRule.WRONG_TYPE),
    ("driver = 'thread'", "worker.driver", ConfigRule.NOT_ONE_OF),
    ("driver = 'FORK'", "worker.driver", ConfigRule.NOT_ONE_OF),
    ("driver = ''", "worker.driver", ConfigRule.NOT_ONE_OF),
    # containment
    ("containment = 1", "worker.containment", ConfigRule.WRONG_TYPE),
    ("containment = ['cgroup']", "worker.containment", ConfigRule.WRONG_TYPE),
    ("containment = 'jail'", "worker.containment", ConfigRule.NOT_ONE_OF),
    ("containment = 'CGROUP'", "worker.containment", ConfigRule.NOT_ONE_OF),
    # control.transport
    ("[worker.control]\ntransport = true", "worker.control.transport", ConfigRule.WRONG_TYPE),
    ("[worker.control]\ntransport = 'udp'", "worker.control.transport", ConfigRule.NOT_ONE_OF),
    # tcp.host
    ("[worker.tcp]\nhost = 127", "worker.tcp.host", ConfigRule.WRONG_TYPE),
    ("[worker.tcp]\nhost = 'localhost'", "worker.tcp.host", ConfigRule.NOT_LOOPBACK),
    ("[worker.tcp]\nhost = '0.0.0.0'", "worker.tcp.host", ConfigRule.NOT_LOOPBACK),
    ("[worker.tcp]\nhost = '127.0.0.2'", "worker.tcp.host", ConfigRule.NOT_LOOPBACK),
    ("[worker.tcp]\nhost = '::1'", "worker.tcp.host", ConfigRule.NOT_LOOPBACK),
    ("[worker.tcp]\nhost = ' 127.0.0.1'", "worker.tcp.host", ConfigRule.NOT_LOOPBACK),
    # tcp.port
    ("[worker.tcp]\nport = '9327'", "worker.tcp.port", ConfigRule.WRONG_TYPE),
    ("[worker.tcp]\nport = 0", "worker.tcp.port", ConfigRule.OUT_OF_RANGE),
    ("[worker.tcp]\nport = 65536", "worker.tcp.port", ConfigRule.OUT_OF_RANGE),
    # runtime paths: type and safety
    ("socket_path = 1", "worker.socket_path", ConfigRule.WRONG_TYPE),
    ("socket_path = '/run/worker.sock'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("socket_path = 'var/../worker.sock'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("socket_path = 'var\\\\worker.sock'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("socket_path = 'unix://var/sock'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("socket_path = 'var/@tmp/sock'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("socket_path = 'var/my sock'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ('socket_path = "var/\\u0007sock"', "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("socket_path = ''", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    (f"socket_path = '{LONG}x'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("state_path = true", "worker.state_path", ConfigRule.WRONG_TYPE),
    ("state_path = '.'", "worker.state_path", ConfigRule.UNSAFE_PATH),
    (f"state_path = '{LONG}'", "worker.state_path", ConfigRule.UNSAFE_PATH),  # its .tmp: 204
    ("stop_flag_path = ['var/stop']", "worker.stop_flag_path", ConfigRule.WRONG_TYPE),
    ("stop_flag_path = 'var//stop'", "worker.stop_flag_path", ConfigRule.UNSAFE_PATH),
    # seed 000's skeleton/ rule: no runtime path through a directory named skeleton
    ("socket_path = 'skeleton/worker.sock'", "worker.socket_path", ConfigRule.UNSAFE_PATH),
    ("state_path = 'var/skeleton/state.json'", "worker.state_path", ConfigRule.UNSAFE_PATH),
    ("stop_flag_path = 'skeleton/x'", "worker.stop_flag_path", ConfigRule.UNSAFE_PATH),
    # runtime paths: canonical lifecycle paths are reserved
    ("socket_path = 'var/tmp/worker.lock'", "worker.socket_path", ConfigRule.RESERVED_PATH),
    ("socket_path = 'var/tmp'", "worker.socket_path", ConfigRule.RESERVED_PATH),
    ("socket_path = 'var'", "worker.socket_path", ConfigRule.RESERVED_PATH),
    ("state_path = 'var/tmp/worker.lifecycle.json'", "worker.state_path", ConfigRule.RESERVED_PATH),
    ("state_path = 'var/tmp/worker.lifecycle.json.tmp'", "worker.state_path",
     ConfigRule.RESERVED_PATH),
    ("state_path = 'var/tmp/worker.lifecycle.json.tmp/s'", "worker.state_path",
     ConfigRule.RESERVED_PATH),
    ("state_path = 'var/generations/state.json'", "worker.state_path", ConfigRule.RESERVED_PATH),
    ("stop_flag_path = 'var/tmp/worker.endpoint-key'", "worker.stop_flag_path",
     ConfigRule.RESERVED_PATH),
    ("stop_flag_path = 'var/generations'", "worker.stop_flag_path", ConfigRule.RESERVED_PATH),
    # runtime paths: no two may overlap (the later key in field order is named)
    ("state_path = 'var/tmp/worker.sock'", "worker.state_path", ConfigRule.OVERLAPPING_PATH),
    ("socket_path = 'var/tmp/worker.state.json.tmp'", "worker.state_path",
     ConfigRule.OVERLAPPING_PATH),
    ("state_path = 'var/tmp/worker.sock/state'", "worker.state_path",
     ConfigRule.OVERLAPPING_PATH),
    ("socket_path = 'var/tmp/worker.stop'", "worker.stop_flag_path", ConfigRule.OVERLAPPING_PATH),
    ("stop_flag_path = 'var/tmp/worker.state.json.tmp'", "worker.stop_flag_path",
     ConfigRule.OVERLAPPING_PATH),
    ("stop_flag_path = 'var/tmp/worker.state.json'", "worker.stop_flag_path",
     ConfigRule.OVERLAPPING_PATH),
    ("socket_path = 'run'\nstop_flag_path = 'run/stop'", "worker.stop_flag_path",
     ConfigRule.OVERLAPPING_PATH),
    # timeouts
    *[
        case
        for name in ("start_timeout_ms", "stop_timeout_ms", "force_kill_timeout_ms")
        for case in (
            (f"{name} = '10'", f"worker.{name}", ConfigRule.WRONG_TYPE),
            (f"{name} = 1.5", f"worker.{name}", ConfigRule.WRONG_TYPE),
            (f"{name} = true", f"worker.{name}", ConfigRule.WRONG_TYPE),
            (f"{name} = 0", f"worker.{name}", ConfigRule.OUT_OF_RANGE),
            (f"{name} = -1000", f"worker.{name}", ConfigRule.OUT_OF_RANGE),
            (f"{name} = 3_600_001", f"worker.{name}", ConfigRule.OUT_OF_RANGE),
        )
    ],
    # heartbeat_timeout_ms: 0 (off) or 100..MAX_TIMEOUT_MS
    ("heartbeat_timeout_ms = '1000'", "worker.heartbeat_timeout_ms", ConfigRule.WRONG_TYPE),
    ("heartbeat_timeout_ms = 1000.0", "worker.heartbeat_timeout_ms", ConfigRule.WRONG_TYPE),
    ("heartbeat_timeout_ms = false", "worker.heartbeat_timeout_ms", ConfigRule.WRONG_TYPE),
    ("heartbeat_timeout_ms = -1", "worker.heartbeat_timeout_ms", ConfigRule.OUT_OF_RANGE),
    ("heartbeat_timeout_ms = 1", "worker.heartbeat_timeout_ms", ConfigRule.OUT_OF_RANGE),
    ("heartbeat_timeout_ms = 99", "worker.heartbeat_timeout_ms", ConfigRule.OUT_OF_RANGE),
    ("heartbeat_timeout_ms = 3_600_001", "worker.heartbeat_timeout_ms", ConfigRule.OUT_OF_RANGE),
    # debug
    ("debug = 1", "worker.debug", ConfigRule.WRONG_TYPE),
    ("debug = 'true'", "worker.debug", ConfigRule.WRONG_TYPE),
    ("debug = 1970-01-01", "worker.debug", ConfigRule.WRONG_TYPE),
    # telemetry
    ("telemetry = 'prometheus'", "worker.telemetry", ConfigRule.NOT_ONE_OF),
    ("telemetry = 'OTEL'", "worker.telemetry", ConfigRule.NOT_ONE_OF),
    ("telemetry = true", "worker.telemetry", ConfigRule.WRONG_TYPE),
]  # fmt: skip


@pytest.mark.parametrize(("body", "key", "rule"), CASES)
def test_each_rule_names_the_key_and_the_rule(
    tmp_path: Path, body: str, key: str, rule: ConfigRule
) -> None:
    error = _config_error(tmp_path, f"[worker]\n{body}\n")
    assert (error.key, error.rule) == (key, rule)
    assert str(error) == "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid"
    assert error.exit_code is ExitCode.CONFIG_INVALID
    assert int(error.exit_code) == 6


def test_every_rule_of_the_worker_table_is_reached() -> None:
    """The file-level rules are covered above; UNAVAILABLE belongs to the driver resolver,
    DUPLICATE to registering ``[[process]]`` entries (tests/process/test_config_route.py),
    REQUIRED to a task source's option check (tests/supervisor/test_task_sources.py)."""
    file_level = {ConfigRule.FILE_MISSING, ConfigRule.FILE_UNREADABLE, ConfigRule.NOT_TOML}
    elsewhere = {ConfigRule.UNAVAILABLE, ConfigRule.DUPLICATE, ConfigRule.REQUIRED}
    reached = {rule for _, _, rule in CASES} | file_level | elsewhere
    assert reached == set(ConfigRule)


def test_skeleton_is_refused_only_as_a_directory() -> None:
    """The skeleton/ rule is about a directory of that name, like the .. rule: a file
    named skeleton or a directory that merely starts with the word is fine."""
    config = parse_config({"socket_path": "var/skeletons/sock", "stop_flag_path": "skeleton"})
    paths = config.paths
    assert (paths.socket_path, paths.stop_flag_path) == ("var/skeletons/sock", "skeleton")


def test_neighbouring_paths_do_not_overlap() -> None:
    """Overlap is by path segment: a shared name prefix is not nesting."""
    config = parse_config(
        {
            "socket_path": "var/tmp/worker",
            "state_path": "var/tmp/worker.sock",
            "stop_flag_path": "var/tmp/worker.sock.tmp.x",
        }
    )
    assert config.paths.state_tmp_path == "var/tmp/worker.sock.tmp"
    assert parse_config({"socket_path": "var/tmp/worker.lock.d/ctl.sock"}).paths.socket_path


def test_the_first_broken_rule_wins_in_a_stable_order(tmp_path: Path) -> None:
    error = _config_error(tmp_path, "[worker]\nzzz = 1\naaa = 2\nworkers = 0\n")
    assert error.key == "worker.zzz"  # unknown keys first, in file order
    error = _config_error(tmp_path, "[worker]\ndebug = 1\nworkers = -1\n")
    assert error.key == "worker.workers"  # then field order, not file order


class TestConverterStrictness:
    """The cattrs converter: nothing coerced, no unknown key, in every table."""

    @pytest.mark.parametrize(
        ("body", "key"),
        [
            ("[worker]\nworkers = true", "worker.workers"),
            ("[worker]\nworkers = 4.0", "worker.workers"),
            ("[worker]\ntask_source = true", "worker.task_source"),
            ("[worker]\napp_path = 'src'", "worker.app_path"),  # never split into characters
            ("[worker]\ndriver = false", "worker.driver"),
            ("[worker]\nsource_options = 1", "worker.source_options"),
            ("[worker.source_options]\nsize = 1.5", "worker.source_options.size"),
            ("[worker.hooks]\nbefore = [true]", "worker.hooks.before[0]"),
            ("[worker]\nhooks = ['a:b']", "worker.hooks"),
            ("[worker.control]\ntransport = 1", "worker.control.transport"),
            ("[worker.tcp]\nport = true", "worker.tcp.port"),
            ("[worker.tcp]\nhost = true", "worker.tcp.host"),
            ("[worker]\nsocket_path = false", "worker.socket_path"),
            ("[worker]\nstop_timeout_ms = true", "worker.stop_timeout_ms"),
            ("[worker]\ndebug = 0", "worker.debug"),
            ("[worker]\nmetrics_port = false", "worker.metrics_port"),
            ("[worker]\nmetrics_host = 2130706433", "worker.metrics_host"),
            ("[worker]\nmsg_queue_key = true", "worker.msg_queue_key"),
            ("[worker]\nevent_loop = ['trio']", "worker.event_loop"),
            ("[worker]\nprocess_modules = 'jobs'", "worker.process_modules"),
            ("[worker]\nrestart_intensity = 1.0", "worker.restart_intensity"),
            ("[[process]]\ntarget = 'jobs:run'\nworkers = true", "process[0].workers"),
            ("[[process]]\ntarget = 'jobs:run'\nenable_async = 0", "process[0].enable_async"),
            ("[[process]]\ntarget = 'jobs:run'\nname = 1", "process[0].name"),
            ("[[process]]\ntarget = ['jobs:run']", "process[0].target"),
        ],
    )
    def test_a_wrong_type_in_each_table(self, tmp_path: Path, body: str, key: str) -> None:
        """A boolean is not an integer, an integer not a boolean, a string not an array."""
        error = _config_error(tmp_path, body + "\n")
        assert (error.key, error.rule) == (key, ConfigRule.WRONG_TYPE)

    @pytest.mark.parametrize(
        ("body", "key"),
        [
            ("[worker]\npaths = {}", "worker.paths"),  # the records' groups are not keys
            ("[worker]\nbudgets = 1", "worker.budgets"),
            ("[worker]\nentries = []", "worker.entries"),
            ("[worker]\nworker = {}", "worker.worker"),
            ("[worker.hooks]\nbefore = []\nduring = []", "worker.hooks.during"),
            ("[worker.tcp]\nport = 1\n[worker.tcp.extra]", "worker.tcp.extra"),
            ("[[process]]\ntarget = 'jobs:run'\nindex = 0", "process[0].index"),
            ("entries = []", "entries"),
        ],
    )
    def test_an_unknown_key_in_each_table(self, tmp_path: Path, body: str, key: str) -> None:
        error = _config_error(tmp_path, body + "\n")
        assert (error.key, error.rule) == (key, ConfigRule.UNKNOWN_KEY)

    def test_the_shape_comes_before_values(self, tmp_path: Path) -> None:
        """Unknown keys and tables that are not tables, anywhere, before any value."""
        error = _config_error(tmp_path, "[worker]\nworkers = '4'\n[worker.tcp]\nbind = 1\n")
        assert (error.key, error.rule) == ("worker.tcp.bind", ConfigRule.UNKNOWN_KEY)
        error = _config_error(tmp_path, "[worker]\nworkers = -1\ncontrol = 'unix'\n")
        assert (error.key, error.rule) == ("worker.control", ConfigRule.WRONG_TYPE)
        body = "[worker]\nworkers = -1\n[[process]]\ntarget = 'a:b'\n[[process]]\nx = 1\n"
        error = _config_error(tmp_path, body)
        assert (error.key, error.rule) == ("process[1].x", ConfigRule.UNKNOWN_KEY)

    def test_a_group_reports_its_types_before_its_values(self, tmp_path: Path) -> None:
        error = _config_error(tmp_path, "[worker.tcp]\nhost = 'localhost'\nport = '1'\n")
        assert (error.key, error.rule) == ("worker.tcp.port", ConfigRule.WRONG_TYPE)

    def test_groups_follow_the_tree(self, tmp_path: Path) -> None:
        """The pool's keys, then the subtables, paths, budgets, observability, processes."""
        body = "[worker]\nmsg_queue_key = -1\nmetrics_port = -1\nstop_timeout_ms = 0\n"
        assert _config_error(tmp_path, body).key == "worker.stop_timeout_ms"
        body = "[worker]\nmsg_queue_key = -1\nmetrics_port = -1\n"
        assert _config_error(tmp_path, body).key == "worker.metrics_port"
        body = "[worker]\nstop_timeout_ms = 0\n[worker.tcp]\nport = 0\n"
        assert _config_error(tmp_path, body).key == "worker.tcp.port"

    def test_a_required_process_target_is_reported_with_other_errors(self, tmp_path: Path) -> None:
        error = _config_error(tmp_path, "[[process]]\nname = 'a'\nworkers = 'x'\n")
        assert (error.key, error.rule) == ("process[0].target", ConfigRule.WRONG_TYPE)

    def test_no_error_chains_to_what_cattrs_saw(self, tmp_path: Path) -> None:
        """The error is raised afresh: no cattrs group, note or hook frame holding a value."""
        error = _config_error(tmp_path, f"[worker.tcp]\nport = '{SECRET}'\n")
        assert error.__cause__ is None
        assert error.__context__ is None
        assert not getattr(error, "__notes__", None)
        _assert_no_secret(error)


def test_an_unprintable_unknown_key_is_masked(tmp_path: Path) -> None:
    error = _config_error(tmp_path, f'[worker]\n"{SECRET} and more" = 1\n')
    assert (error.key, error.rule) == ("<unprintable>", ConfigRule.UNKNOWN_KEY)


# --- task_type: a lifecycle failure, not a config error --------------------------------


@pytest.mark.parametrize("value", ["'cron'", "'QUEUE'", "''", "1", "true", "['queue']"])
def test_an_invalid_task_type_is_a_lifecycle_failure(tmp_path: Path, value: str) -> None:
    _write(tmp_path, f"[worker]\ntask_type = {value}\n")
    with pytest.raises(WorkerLifecycleFailedError) as info:
        load_config(tmp_path)
    assert not isinstance(info.value, WorkerConfigError)
    assert info.value.reason is Reason.INVALID_STATE
    assert str(info.value) == "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-invalid-state"


@pytest.mark.parametrize("value", ["queue", "http"])
def test_valid_task_types(value: str) -> None:
    assert parse_config({"task_type": value}).worker.task_type is TaskType(value)


def test_a_config_error_is_reported_before_an_invalid_task_type() -> None:
    with pytest.raises(WorkerConfigError) as info:
        parse_config({"task_type": "cron", "debug": "yes"})
    assert info.value.key == "worker.debug"


# --- no value ever leaks ---------------------------------------------------------------

LEAKS: list[tuple[str, type[Exception]]] = [
    (f"workers = '{SECRET}'", WorkerConfigError),
    (f"max_requests = '{SECRET}'", WorkerConfigError),
    (f"task_source = '{SECRET} x'", WorkerConfigError),
    (f"source_options.database = ['{SECRET}']", WorkerConfigError),
    (f"task_source = 'app:{SECRET}x'", WorkerConfigError),  # hyphen: not an identifier
    (f"app_path = ['/{SECRET}']", WorkerConfigError),
    (f"driver = '{SECRET}'", WorkerConfigError),
    (f"socket_path = '/{SECRET}'", WorkerConfigError),
    (f"state_path = '../{SECRET}'", WorkerConfigError),
    (f"stop_flag_path = 'var/tmp/worker.lock/{SECRET}'", WorkerConfigError),
    (f"debug = '{SECRET}'", WorkerConfigError),
    (f"start_timeout_ms = '{SECRET}'", WorkerConfigError),
    (f"[worker.control]\ntransport = '{SECRET}'", WorkerConfigError),
    (f"[worker.tcp]\nhost = '{SECRET}'", WorkerConfigError),
    (f"[worker.tcp]\nport = '{SECRET}'", WorkerConfigError),
    (f"task_type = '{SECRET}'", WorkerLifecycleFailedError),
]


@pytest.mark.parametrize(("body", "kind"), LEAKS)
def test_the_offending_value_never_appears(
    tmp_path: Path, body: str, kind: type[Exception]
) -> None:
    _write(tmp_path, f"[worker]\n{body}\n")
    with pytest.raises(kind) as info:
        load_config(tmp_path)
    _assert_no_secret(info.value)
    assert all(SECRET not in repr(getattr(info.value, a, "")) for a in ("key", "rule"))


def test_the_offending_value_never_appears_through_parse_config() -> None:
    for table in (
        {"workers": SECRET},
        {"tcp": {"host": SECRET}},
        {"app_path": [".", SECRET + "/../x"]},
        {"task_source": SECRET + " x"},
        {"source_options": {"key": [SECRET]}},
    ):
        with pytest.raises(WorkerConfigError) as info:
            parse_config(table)
        _assert_no_secret(info.value)
