"""The lifecycle lock: how the guardian holds the generation fence and how clients probe it.

One module defines both sides so they always agree on the kind of lock. On Linux it is an
open-file-description lock (``F_OFD_SETLK``): like ``flock`` it belongs to the open file,
not the process, and dies with the last descriptor whatever killed the holder; unlike
``flock`` it can be *tested* with ``F_OFD_GETLK`` without being taken. A probe that took
the lock, even briefly, could make a concurrent ``start`` fail, and a probe that created
the file would leave litter in a root that never ran a pool. Other POSIX systems use
classic ``fcntl`` record locks (the guardian is one process holding one descriptor, so
their per-process semantics do no harm); Windows uses ``msvcrt.locking``, whose probe
has to take and release the lock (documented in ``docs/protocol.md``).

This is I/O: nothing on the sans-IO side of the package imports it.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import sys

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt
else:
    import fcntl

# struct flock: l_type, l_whence, l_start, l_len, l_pid (+ tail padding on 64-bit Linux).
_FLOCK: Final = "@hhqqi4x" if sys.platform.startswith("linux") else "@qqihh"
_LINUX: Final = sys.platform.startswith("linux")


def _flock_bytes(kind: int) -> bytes:
    if _LINUX:
        return struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 0, 0)
    # BSD and macOS order: l_start, l_len, l_pid, l_type, l_whence.
    return struct.pack(_FLOCK, 0, 0, 0, kind, os.SEEK_SET)  # pragma: no cover


def _locked_type(raw: bytes) -> int:
    if _LINUX:
        return int(struct.unpack(_FLOCK, raw)[0])
    return int(struct.unpack(_FLOCK, raw)[3])  # pragma: no cover


# No symlink is followed and nothing blocks on open: a FIFO or a link planted at a lock
# path must neither hang a probe (an exec probe has a deadline) nor let the guardian
# create or lock a file outside the root.
_OPEN_FLAGS: Final = (
    getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
)


def _open_regular(path: str, flags: int) -> int:
    """Open ``path`` as a regular file; anything else is :class:`OSError` ``EINVAL``."""
    fd = os.open(path, flags | _OPEN_FLAGS, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "lock path is not a regular file")
    return fd


def probe(path: str) -> bool:
    """True when the lock at ``path`` is held by someone; never creates or takes it.

    A missing file is a free lock. Raises :class:`OSError` when the file exists but
    cannot be opened or tested, or is not a regular file (callers map that to a
    communication failure).
    """
    try:
        fd = _open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        if sys.platform == "win32":  # pragma: no cover
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                return True
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            return False
        cmd = fcntl.F_OFD_GETLK if _LINUX else fcntl.F_GETLK
        raw = fcntl.fcntl(fd, cmd, _flock_bytes(fcntl.F_WRLCK))
        return _locked_type(raw) != fcntl.F_UNLCK
    finally:
        os.close(fd)


def acquire_shared(path: str) -> int:
    """Take a shared (read) lock for the generation fence and return its descriptor.

    The descriptor is inherited by every worker (explicitly passed, like the channels):
    one open file description shared by the whole generation, so the lock is held until
    the last of them closes it, even if the guardian is gone. Raises :class:`OSError` if
    the lock cannot be taken (call :func:`probe` first, under the main lock).
    """
    fd = _open_regular(path, os.O_RDONLY | os.O_CREAT)
    _lock(fd, shared=True)
    return fd


def acquire(path: str) -> int | None:
    """Take the lock without waiting; return the descriptor that holds it, or None if busy.

    The file is created 0600 if missing. The descriptor is close-on-exec, so no worker
    ever inherits it; the lock is released when it is closed or the holder dies.
    """
    fd = _open_regular(path, os.O_RDWR | os.O_CREAT)
    try:
        _lock(fd, shared=False)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


def _lock(fd: int, *, shared: bool) -> None:
    """Lock ``fd`` without waiting; if that fails, close it and raise :class:`OSError`.

    Both takers differ only in the kind of lock and in what a busy lock means to them,
    so the one platform switch lives here and the descriptor never leaks on failure.
    """
    try:
        if sys.platform == "win32":  # pragma: no cover
            msvcrt.locking(fd, msvcrt.LK_NBRLCK if shared else msvcrt.LK_NBLCK, 1)
        else:
            cmd = fcntl.F_OFD_SETLK if _LINUX else fcntl.F_SETLK
            fcntl.fcntl(fd, cmd, _flock_bytes(fcntl.F_RDLCK if shared else fcntl.F_WRLCK))
    except OSError:
        os.close(fd)
        raise
