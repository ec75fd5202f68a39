"""What a valid coretsia.toml gives: the defaults, a full file's exact PoolConfig, the inclusive
bounds, the accepted spellings, the flat generation snapshot, and the frozen records that
validate when built in code.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from config_files import write_config

from coretsia.supervisor.config import (
    Budgets,
    ControlSettings,
    Hooks,
    Observability,
    PoolConfig,
    ProcessSettings,
    ProcessTable,
    RuntimePaths,
    SpawnMode,
    TaskType,
    TcpSettings,
    TelemetryMode,
    WorkerSettings,
    load_config,
    parse_config,
)
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.vocabulary import ContainmentRequest, DriverRequest, TransportRequest

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


# --- defaults -------------------------------------------------------------------------


def test_no_file_means_every_default(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == PoolConfig()
    assert config.worker.workers == 4
    assert config.worker.max_requests == 1000
    assert config.worker.max_memory_mb == 0  # off
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
    write_config(tmp_path, body)
    assert load_config(tmp_path) == PoolConfig()


def test_a_missing_root_is_no_file_too(tmp_path: Path) -> None:
    assert load_config(tmp_path / "not-there") == PoolConfig()


# --- a full file ----------------------------------------------------------------------


def test_a_full_valid_file(tmp_path: Path) -> None:
    write_config(tmp_path, FULL_FILE)
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
    write_config(tmp_path, "[worker]\nworkers = 1\n")  # the default file is not read
    write_config(tmp_path, "[worker]\nworkers = 2\n", "deploy/prod.toml")
    assert load_config(tmp_path, "deploy/prod.toml").worker.workers == 2


def test_bounds_are_inclusive(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        "[worker]\nworkers = 1024\nmax_requests = 10_000_000\nstart_timeout_ms = 3_600_000\n"
        "max_memory_mb = 1_048_576\n"
        "stop_timeout_ms = 1\nforce_kill_timeout_ms = 1\napp_path = []\n"
        "[worker.tcp]\nport = 65535\n",
    )
    config = load_config(tmp_path)
    worker, budgets = config.worker, config.budgets
    assert (worker.workers, worker.max_requests, config.tcp.port) == (1024, 10_000_000, 65535)
    assert (budgets.start_timeout_ms, budgets.stop_timeout_ms) == (3_600_000, 1)
    assert worker.app_path == ()
    assert worker.max_memory_mb == 1_048_576
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
    assert config.worker.driver is expected  # "pcntl" never survives


@pytest.mark.parametrize("level", ["auto", "namespace", "cgroup", "process"])
def test_containment_levels(level: str) -> None:
    """Each level is accepted as written; auto by default."""
    config = parse_config({"containment": level})
    assert config.worker.containment is ContainmentRequest(level)
    assert PoolConfig().worker.containment is ContainmentRequest.AUTO


def test_spawn_modes_and_preload() -> None:
    """``exec`` by default; ``forkserver`` as written; preload modules are dotted names."""
    assert PoolConfig().worker.spawn is SpawnMode.EXEC
    config = parse_config({"spawn": "forkserver", "preload": ["numpy", "app.models"]})
    assert config.worker.spawn is SpawnMode.FORKSERVER
    assert config.worker.preload == ("numpy", "app.models")
    with pytest.raises(WorkerConfigError) as info:
        parse_config({"spawn": "vfork"})
    assert (info.value.key, info.value.rule) == ("worker.spawn", ConfigRule.NOT_ONE_OF)
    with pytest.raises(WorkerConfigError) as info:
        parse_config({"preload": ["numpy", "app:models"]})
    assert (info.value.key, info.value.rule) == ("worker.preload[1]", ConfigRule.INVALID_TARGET)


@pytest.mark.parametrize("transport", ["auto", "unix", "tcp"])
def test_control_transports(transport: str) -> None:
    config = parse_config({"control": {"transport": transport}})
    assert config.control.transport is TransportRequest(transport)


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
