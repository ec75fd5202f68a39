"""The endpoint key: private, stable across restarts, replaced when it cannot be trusted."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from coretsia.supervisor.daemon import files
from coretsia.worker_protocol.endpoint import ENDPOINT_KEY_BYTES


def test_created_private_and_reused(tmp_path: Path) -> None:
    """A root keeps its key, so its endpoint hash is the same at every start."""
    path = tmp_path / "worker.endpoint-key"
    key = files.endpoint_key(path)
    assert len(key) == ENDPOINT_KEY_BYTES
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_bytes() == key
    assert files.endpoint_key(path) == key


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda path: path.chmod(0o644), id="readable-by-others"),
        pytest.param(lambda path: path.write_bytes(b"short"), id="too-short"),
        pytest.param(lambda path: path.write_bytes(b"k" * 33), id="too-long"),
    ],
)
def test_untrusted_key_is_replaced(tmp_path: Path, spoil: Callable[[Path], object]) -> None:
    """A key others may have read (or a damaged one) is never used for the hash again."""
    path = tmp_path / "worker.endpoint-key"
    old = files.endpoint_key(path)
    spoil(path)
    new = files.endpoint_key(path)
    assert new != old
    assert len(new) == ENDPOINT_KEY_BYTES
    assert path.read_bytes() == new
    assert path.stat().st_mode & 0o777 == 0o600


def test_symlinked_key_is_not_followed(tmp_path: Path) -> None:
    """A link planted at the key path is replaced by a file; its target is neither read
    nor written."""
    target = tmp_path / "elsewhere"
    target.write_bytes(b"k" * ENDPOINT_KEY_BYTES)
    target.chmod(0o600)
    path = tmp_path / "worker.endpoint-key"
    path.symlink_to(target)
    key = files.endpoint_key(path)
    assert key != b"k" * ENDPOINT_KEY_BYTES
    assert not path.is_symlink()
    assert target.read_bytes() == b"k" * ENDPOINT_KEY_BYTES


def test_fifo_at_the_key_path_does_not_block(tmp_path: Path) -> None:
    """A FIFO planted at the key path is replaced instead of hanging the start."""
    path = tmp_path / "worker.endpoint-key"
    os.mkfifo(path, 0o600)
    key = files.endpoint_key(path)
    assert path.read_bytes() == key
