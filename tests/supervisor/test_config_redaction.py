"""No configuration error ever carries the offending value: not in its message, repr, args,
key, rule or printed traceback, whether read from a file or from ``parse_config``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from config_files import SECRET, assert_no_secret, config_error, write_config

from coretsia.supervisor.config import load_config, parse_config
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerLifecycleFailedError


def test_an_unprintable_unknown_key_is_masked(tmp_path: Path) -> None:
    error = config_error(tmp_path, f'[worker]\n"{SECRET} and more" = 1\n')
    assert (error.key, error.rule) == ("<unprintable>", ConfigRule.UNKNOWN_KEY)


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
    write_config(tmp_path, f"[worker]\n{body}\n")
    with pytest.raises(kind) as info:
        load_config(tmp_path)
    assert_no_secret(info.value)
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
        assert_no_secret(info.value)
