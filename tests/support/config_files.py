"""Write a coretsia.toml into a root and read the error it must raise: shared by the
configuration tests, with the secret they plant where no error may show it.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from coretsia.supervisor.config import CONFIG_FILE, load_config
from coretsia.worker_protocol.exceptions import WorkerConfigError

SECRET = "s3cr3t-value"


def write_config(root: Path, body: str | bytes, name: str = CONFIG_FILE) -> Path:
    """Write ``body`` as the file ``name`` under ``root``; bytes are written as given, so a
    test can plant text that is not UTF-8."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(body, str):
        path.write_text(body, encoding="utf-8")
    else:
        path.write_bytes(body)
    return path


def config_error(root: Path, body: str | bytes) -> WorkerConfigError:
    """Write ``body`` as the root's default file and return the error loading it raises."""
    write_config(root, body)
    with pytest.raises(WorkerConfigError) as info:
        load_config(root)
    return info.value


def assert_no_secret(error: BaseException, secret: str = SECRET) -> None:
    """Neither the message, the repr, the args nor the whole printed traceback holds it."""
    assert secret not in str(error)
    assert secret not in repr(error)
    assert all(secret not in str(arg) for arg in error.args)
    assert secret not in "".join(traceback.format_exception(error))
