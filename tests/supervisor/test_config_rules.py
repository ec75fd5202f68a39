"""Every rule of every ``[worker]`` key, reached through a real file with its exact dotted key
and rule; the order in which broken rules are reported; and ``task_type``, whose bad value is
a lifecycle failure rather than a configuration error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from config_files import config_error, write_config

from coretsia.supervisor.config import TaskType, load_config, parse_config
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerLifecycleFailedError
from coretsia.worker_protocol.exit_codes import ExitCode

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
    # max_memory_mb
    ("max_memory_mb = '300'", "worker.max_memory_mb", ConfigRule.WRONG_TYPE),
    ("max_memory_mb = true", "worker.max_memory_mb", ConfigRule.WRONG_TYPE),
    ("max_memory_mb = 300.0", "worker.max_memory_mb", ConfigRule.WRONG_TYPE),
    ("max_memory_mb = -1", "worker.max_memory_mb", ConfigRule.OUT_OF_RANGE),
    ("max_memory_mb = 1_048_577", "worker.max_memory_mb", ConfigRule.OUT_OF_RANGE),
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
    error = config_error(tmp_path, f"[worker]\n{body}\n")
    assert (error.key, error.rule) == (key, rule)
    assert str(error) == "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid"
    assert error.exit_code is ExitCode.CONFIG_INVALID
    assert int(error.exit_code) == 6


def test_every_rule_of_the_worker_table_is_reached() -> None:
    """The file-level rules are covered above; UNAVAILABLE belongs to the driver resolver,
    DUPLICATE to registering ``[[process]]`` entries (tests/process/test_config_route.py),
    REQUIRED to a task source's option check (tests/supervisor/test_task_sources.py),
    UNTRUSTED_PATH to the runtime directories' owner and mode
    (tests/lifecycle/test_lifecycle_trusted_paths.py)."""
    file_level = {ConfigRule.FILE_MISSING, ConfigRule.FILE_UNREADABLE, ConfigRule.NOT_TOML}
    elsewhere = {
        ConfigRule.UNAVAILABLE,
        ConfigRule.DUPLICATE,
        ConfigRule.REQUIRED,
        ConfigRule.UNTRUSTED_PATH,
    }
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
    error = config_error(tmp_path, "[worker]\nzzz = 1\naaa = 2\nworkers = 0\n")
    assert error.key == "worker.zzz"  # unknown keys first, in file order
    error = config_error(tmp_path, "[worker]\ndebug = 1\nworkers = -1\n")
    assert error.key == "worker.workers"  # then field order, not file order


# --- task_type: a lifecycle failure, not a config error --------------------------------


@pytest.mark.parametrize("value", ["'cron'", "'QUEUE'", "''", "1", "true", "['queue']"])
def test_an_invalid_task_type_is_a_lifecycle_failure(tmp_path: Path, value: str) -> None:
    write_config(tmp_path, f"[worker]\ntask_type = {value}\n")
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
