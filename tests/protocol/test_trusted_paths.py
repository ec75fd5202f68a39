"""Trusted runtime paths: only the pool's user's or root's, writable by no one else.

Real files and directories, and ``nobody`` as the other user (the checks run as root
here); a refusal names the role and never the path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coretsia.worker_protocol import trusted_paths
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError

NOBODY = 65534
ROLE = trusted_paths.RUNTIME_DIR


def _refused(check: object, path: Path) -> WorkerConfigError:
    assert callable(check)
    with pytest.raises(WorkerConfigError) as caught:
        check(path, ROLE)
    assert (caught.value.key, caught.value.rule) == (ROLE, ConfigRule.UNTRUSTED_PATH)
    assert str(path) not in str(caught.value) + repr(caught.value)
    return caught.value


def test_a_private_directory_and_file_of_ours_are_trusted(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o755)
    (tmp_path / "f").touch(mode=0o644)
    assert trusted_paths.check_path(tmp_path / "d", ROLE) is True
    assert trusted_paths.check_path(tmp_path / "f", ROLE) is True


def test_missing_is_not_refused_but_said(tmp_path: Path) -> None:
    assert trusted_paths.check_path(tmp_path / "none", ROLE) is False


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777, 0o1777, 0o730])
def test_a_directory_others_may_write_into_is_refused(tmp_path: Path, mode: int) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d").chmod(mode)
    _refused(trusted_paths.check_path, tmp_path / "d")


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_file_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    (tmp_path / "f").touch()
    (tmp_path / "f").chmod(mode)
    _refused(trusted_paths.check_path, tmp_path / "f")
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        with pytest.raises(WorkerConfigError):
            trusted_paths.check_fd(fd, ROLE)
    finally:
        os.close(fd)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_what_another_user_owns_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o700)
    (tmp_path / "f").touch(mode=0o600)
    for path in (tmp_path / "d", tmp_path / "f"):
        os.chown(path, NOBODY, NOBODY)
    _refused(trusted_paths.check_path, tmp_path / "d")
    _refused(trusted_paths.check_path, tmp_path / "f")


def test_a_symlink_is_refused_the_kind_is_left_to_its_user(tmp_path: Path) -> None:
    """A link is never trusted (to a directory or a file); a file where a directory
    belongs is for whatever uses it to refuse (the lock, a publish)."""
    (tmp_path / "d").mkdir(mode=0o700)
    (tmp_path / "f").touch(mode=0o600)
    (tmp_path / "link").symlink_to("d")
    (tmp_path / "file-link").symlink_to("f")
    _refused(trusted_paths.check_path, tmp_path / "link")
    _refused(trusted_paths.check_path, tmp_path / "file-link")
    assert trusted_paths.check_path(tmp_path / "f", ROLE) is True


def test_make_dir_is_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        trusted_paths.make_dir(tmp_path / "d", ROLE)
    finally:
        os.umask(previous)
    assert (tmp_path / "d").stat().st_mode & 0o777 == trusted_paths.DIR_MODE


def test_make_dir_checks_what_already_exists(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d").chmod(0o1777)
    _refused(trusted_paths.make_dir, tmp_path / "d")
    assert (tmp_path / "d").stat().st_mode & 0o7777 == 0o1777  # left as it was
