"""The supervisor's own files under ``var/tmp``: written atomically, private, removable.

Everything here runs under the umask 077 the supervisor sets before it starts any thread,
so no file of ours is ever readable by another user, even for an instant; modes are
still set and checked explicitly where the seed demands it (the locator and the socket).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from coretsia.worker_protocol.endpoint import ENDPOINT_KEY_BYTES


def write_atomic(
    path: Path, data: bytes, tmp: Path | None = None, *, durable: bool = False
) -> None:
    """Write ``data`` through a temporary file and a rename: readers see old or new.

    Only a ``durable`` file is synced to disk first. The state file, the locator and the
    stop flag describe a live process and mean nothing after the machine's crash (the lock
    they stand behind is gone with it), while an ``fsync`` costs milliseconds on the event
    loop at every one of their writes: one per worker becoming ready. The endpoint key
    outlives the run, so it is durable.
    """
    tmp = tmp or path.with_name(path.name + ".tmp")
    remove(tmp)  # a stale one from a killed run; the lock makes the directory ours
    # Exclusive and never through a symlink: nobody can make us write a secret elsewhere.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        if os.fstat(fd).st_mode & 0o777 != 0o600:
            raise PermissionError
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def remove(path: Path) -> None:
    """Delete a file if it exists."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def endpoint_key(path: Path) -> bytes:
    """The root's secret for the endpoint hash: reused if valid, created otherwise.

    Reuse keeps ``endpoint_hash`` stable across restarts of one root (a dashboard can
    follow a pool); a key that anyone else could have read, or that is not our own
    regular file, is replaced, since whoever knows it can test candidate paths and ports
    against the published hash. Read without following a symlink or blocking on a FIFO.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            info = os.fstat(fd)
            if (
                stat.S_ISREG(info.st_mode)
                and info.st_mode & 0o777 == 0o600
                and info.st_uid == os.geteuid()
            ):
                key = os.read(fd, ENDPOINT_KEY_BYTES + 1)
                if len(key) == ENDPOINT_KEY_BYTES:
                    return key
        except OSError:
            pass
        finally:
            os.close(fd)
    key = secrets.token_bytes(ENDPOINT_KEY_BYTES)
    write_atomic(path, key, durable=True)
    return key
