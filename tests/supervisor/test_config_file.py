"""The configuration file as a whole and its top level: a missing, unsafe, unreadable or non-TOML
file, only ``[worker]`` and ``[[process]]`` at the top, and the rules of the ``[[process]]``
entries and of the process pool's settings, each with its exact dotted key and rule.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from config_files import SECRET, assert_no_secret, config_error, write_config

from coretsia.supervisor.config import CONFIG_FILE, load_config, parse_config
from coretsia.supervisor.daemon.generation_builder import build_generation_spec
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError

# --- the file as a whole ---------------------------------------------------------------


def _file_error(root: Path, config_file: str | None) -> WorkerConfigError:
    with pytest.raises(WorkerConfigError) as info:
        load_config(root, config_file)
    assert info.value.key == "config"
    return info.value


def test_an_explicit_file_that_is_missing(tmp_path: Path) -> None:
    assert _file_error(tmp_path, "prod.toml").rule is ConfigRule.FILE_MISSING
    assert _file_error(tmp_path, CONFIG_FILE).rule is ConfigRule.FILE_MISSING
    write_config(tmp_path, "", "not-a-dir")
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
    write_config(tmp_path, "[worker]\nworkers = 3\n", "shared/coretsia.toml")
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
    write_config(tmp_path, "[worker]\n").chmod(0)
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
    error = config_error(tmp_path, body)
    assert (error.key, error.rule) == ("config", ConfigRule.NOT_TOML)
    assert error.__cause__ is None  # a UnicodeDecodeError would carry the file's bytes
    assert error.__suppress_context__
    assert_no_secret(error)


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
    error = config_error(tmp_path, body)
    assert (error.key, error.rule) == (key, ConfigRule.UNKNOWN_KEY)


def test_process_is_an_array_of_tables(tmp_path: Path) -> None:
    for body in ("process = 1\n", "[process]\nname = 'a'\n", "process = [1]\n"):
        error = config_error(tmp_path, body)
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
    error = config_error(tmp_path, "[[process]]\ntarget = 'jobs:ok'\n[[process]]\n" + table)
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
    error = config_error(tmp_path, f"[worker]\n{line}\n")
    assert (error.key, error.rule) == (key, rule)


def test_no_task_workers_needs_a_process_entry(tmp_path: Path) -> None:
    """The rule spans the file and the registration, so ``start`` checks it at the end."""
    write_config(tmp_path, "[worker]\nworkers = 0\n")
    config = load_config(tmp_path)  # no entries yet: registration decides
    with pytest.raises(WorkerConfigError) as info:
        build_generation_spec(tmp_path, config, None)
    assert (info.value.key, info.value.rule) == ("worker.workers", ConfigRule.OUT_OF_RANGE)
    write_config(tmp_path, "[worker]\nworkers = 0\nprocess_modules = ['jobs']\n")
    assert load_config(tmp_path).processes.process_modules == ("jobs",)


@pytest.mark.parametrize("body", ["worker = 4\n", "worker = [1]\n", "worker = 'queue'\n"])
def test_worker_must_be_a_table(tmp_path: Path, body: str) -> None:
    error = config_error(tmp_path, body)
    assert (error.key, error.rule) == ("worker", ConfigRule.WRONG_TYPE)


def test_parse_config_wants_a_mapping() -> None:
    with pytest.raises(WorkerConfigError) as info:
        parse_config([("workers", 4)])  # type: ignore[arg-type]
    assert (info.value.key, info.value.rule) == ("worker", ConfigRule.WRONG_TYPE)
