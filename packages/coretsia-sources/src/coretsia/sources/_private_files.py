"""Files and directories only their owner can read: the queue's payloads are private data.

Why not ``os.umask``: the umask is process-wide, and a worker may have threads (the
application's) creating files at the same moment; changing it around our own opens would
change theirs too. So each file or directory is created with a private mode and then set
to exactly that mode (the umask can only take bits away, so it is never more open in
between). What already exists is left alone: a directory the user made is theirs to set.

SQLite needs no help for its ``-wal`` and ``-shm`` files: on Unix it creates them with
the database file's own permission bits, whatever the umask (its ``robust_open`` sets
the mode of a new, empty file to the database's), so a ``0600`` database gives ``0600``
companions.
"""

from __future__ import annotations

import os
from typing import Final

from coretsia.worker_protocol.trusted_paths import QUEUE_DIR, check_path

DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


def make_private_dirs(path: str) -> None:
    """Create ``path`` and its missing parents, each ``0700``; existing ones are untouched.

    Each one we set out to create must then be trusted (``queue-dir``: ours or root's, not
    writable by group or others): another user may have made it first, in a parent open
    to everyone (:func:`~coretsia.worker_protocol.trusted_paths.check_path`).
    """
    missing: list[str] = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile (by a sibling worker, which sets its mode): not ours
        os.chmod(directory, DIR_MODE)  # mkdir's mode went through the umask
    for directory in missing:
        check_path(directory, QUEUE_DIR)


def create_private_file(path: str) -> None:
    """Create an empty ``0600`` file at ``path`` unless something is there already."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, FILE_MODE)
    except FileExistsError:
        return
    try:
        _set_mode(fd)
    finally:
        os.close(fd)


def open_private(path: str, *, create: bool = True) -> int:
    """A read-write descriptor of ``path`` (created ``0600`` if asked); never follows a link."""
    flags = os.O_RDWR | _CLOEXEC | _NOFOLLOW | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        _set_mode(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _set_mode(fd: int) -> None:
    """Give our own new file exactly ``0600`` (the umask may have taken bits away)."""
    fchmod = getattr(os, "fchmod", None)
    if fchmod is not None and os.fstat(fd).st_mode & 0o777 != FILE_MODE:
        fchmod(fd, FILE_MODE)
