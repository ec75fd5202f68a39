"""Runtime paths Coretsia may trust: owned by the pool's user (or root), writable by no other.

Why: ``start`` runs as the pool's user (often root) and every file under ``var/`` steers
that user's processes: the lock decides who runs, a generation decides which module a
worker imports. A directory someone else owns or may write into (a service user's
directory, a tarball extracted with its owner, a ``chown -R``, a mode of ``1777``) lets
that someone plant the lock or the generation: root code execution. So, the way
OpenSSH's ``StrictModes`` treats a home directory, a path is trusted only when its owner
is the effective uid running the pool or root, and its mode has neither the group's nor
others' write bit; and it must not be a symlink (to a directory or anything else).

Checked top-down (``var``, then ``var/tmp``...): under a trusted directory, only its
owner or root can create an entry, so a path that is missing is trusted by the time we
create it (:func:`make_dir`), with an explicit mode whatever the umask.

A refusal is :class:`~coretsia.worker_protocol.exceptions.WorkerConfigError` with the
path's *role* as its key (a stable token, :data:`ROLES`) and ``untrusted-path`` as its
rule: the path itself never travels.
"""

from __future__ import annotations

import os
import stat

from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final, NoReturn

VAR_DIR: Final = "var-dir"
"""``var/``: every runtime directory below hangs from it."""
RUNTIME_DIR: Final = "runtime-dir"
"""``var/tmp``: the lock, the fence, the locator, the endpoint key, state files."""
GENERATIONS_DIR: Final = "generations-dir"
"""``var/generations``: ``current`` and the generation directories."""
GENERATION: Final = "generation"
"""A generation's directory, its ``generation.json`` and the ``current`` pointer."""
LOCK_FILE: Final = "lock-file"
"""``var/tmp/worker.lock`` and the generation fence beside it."""
QUEUE_DIR: Final = "queue-dir"
"""A directory the SQLite queue created for its database, notifications or locks."""
ROLES: Final = (VAR_DIR, RUNTIME_DIR, GENERATIONS_DIR, GENERATION, LOCK_FILE, QUEUE_DIR)

DIR_MODE: Final = 0o700
_UNSAFE_BITS: Final = stat.S_IWGRP | stat.S_IWOTH
_DIR_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def is_trusted(info: os.stat_result) -> bool:
    """Owned by us (the effective uid) or root, and not writable by group or others."""
    return info.st_uid in (os.geteuid(), 0) and not info.st_mode & _UNSAFE_BITS


def check_path(path: str | os.PathLike[str], role: str) -> bool:
    """Refuse ``path`` unless it is trusted, and never a symlink; False if it is missing.

    Its kind is the user's business: whatever opens or writes it refuses the wrong one
    (the lock anything but a regular file, a publish a file where a directory belongs).
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:
        refuse(role)
    if stat.S_ISLNK(info.st_mode) or not is_trusted(info):
        refuse(role)
    return True


def check_fd(fd: int, role: str) -> None:
    """Refuse an open file or directory unless it is trusted (what was opened, not a name)."""
    try:
        info = os.fstat(fd)
    except OSError:
        refuse(role)
    if not is_trusted(info):
        refuse(role)


def make_dir(path: str | os.PathLike[str], role: str) -> None:
    """Create ``path`` (``0700`` whatever the umask) unless it exists; then check it.

    Call with its parent already checked: then nobody else can have made it meanwhile.
    """
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    else:
        # mkdir's mode went through the umask; set it on what we made, never via a link.
        fd = os.open(path, _DIR_FLAGS)
        try:
            os.fchmod(fd, DIR_MODE)
        finally:
            os.close(fd)
    check_path(path, role)


def refuse(role: str) -> NoReturn:
    """Raise the configuration error naming ``role`` (never the path) as untrusted."""
    raise WorkerConfigError(role, ConfigRule.UNTRUSTED_PATH)
