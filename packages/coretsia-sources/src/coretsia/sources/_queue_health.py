"""Which failures of an SQLite queue have a name of their own: a damaged file, a full disk.

An operator who reads "settlement failed" after a disk filled up, or after a file was
damaged, has to turn debug mode on to learn which. SQLite says which: the primary result
codes ``SQLITE_CORRUPT`` (11) and ``SQLITE_NOTADB`` (26) mean the file is damaged (or is
not a database at all), ``SQLITE_FULL`` (13) that a write found no space. An
``SQLITE_IOERR`` (10) is many things; it counts as "full" only when the file system
indeed has (almost) no space left: a missing ``-shm`` file that cannot be created on a
full disk is an I/O error, not ``SQLITE_FULL``.

Python exposes the code as ``sqlite_errorcode`` from 3.11 on. On 3.10 the exception has
no code, only SQLite's own text for it (``sqlite3_errstr``, fixed in SQLite's source and
the same in every build): the texts below are read only where the code is missing.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from typing import Final, Literal

from coretsia.sources._queue_records import QueueCorruptError, QueueError, QueueFullError

Fault = Literal["corrupt", "full"]

MIN_FREE_BYTES: Final = 64 * 1024
"""Less free space than this on the queue's file system is a full disk: a lease or an
acknowledgement appends a few pages (4 KiB each) to the WAL, and a fresh ``-shm`` needs
32 KiB."""

_CORRUPT: Final = 11
_IOERR: Final = 10
_FULL: Final = 13
_NOTADB: Final = 26
_CODE_TEXTS: Final = {
    "database disk image is malformed": _CORRUPT,
    "file is not a database": _NOTADB,
    "database or disk is full": _FULL,
    "disk I/O error": _IOERR,
}
"""SQLite's message for each code (``sqlite3_errstr``): Python 3.10 gives no code."""


def fault(error: BaseException, database: str) -> Fault | None:
    """``corrupt``, ``full`` or None for ``error`` (or what it was raised from).

    ``database`` is the queue file's path: an I/O error is "full" when its file system
    has less than :data:`MIN_FREE_BYTES` free.
    """
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, QueueCorruptError):
            return "corrupt"
        if isinstance(current, QueueFullError):
            return "full"
        if isinstance(current, sqlite3.Error):
            return _sqlite_fault(current, database)
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return "full"
        current = current.__cause__
    return None


def queue_error(error: sqlite3.Error, what: str, database: str) -> QueueError:
    """``error`` as the queue's error: :class:`QueueCorruptError` or
    :class:`QueueFullError` when it is one of those faults, else :class:`QueueError`."""
    kind = _sqlite_fault(error, database)
    cls = {"corrupt": QueueCorruptError, "full": QueueFullError}.get(kind or "", QueueError)
    return cls(f"{what}: {error}")


def check_space(database: str) -> None:
    """Raise :class:`QueueFullError` if the file system of ``database`` is (almost) full.

    What an unprivileged process may still use (``f_bavail``), the figure ``df`` shows.
    Where ``statvfs`` is missing (not POSIX) nothing is checked.
    """
    if _no_space(database):
        raise QueueFullError("no space left on the queue's file system")


def _sqlite_fault(error: sqlite3.Error, database: str) -> Fault | None:
    code = getattr(error, "sqlite_errorcode", None)  # Python 3.11+
    if code is None:
        code = _CODE_TEXTS.get(str(error), -1)
    primary = code & 0xFF  # an extended code carries its primary code in the low byte
    if primary in (_CORRUPT, _NOTADB):
        return "corrupt"
    if primary == _FULL or (primary == _IOERR and _no_space(database)):
        return "full"
    return None


def _no_space(database: str) -> bool:
    if not hasattr(os, "statvfs"):  # pragma: no cover - not POSIX
        return False
    try:
        stat = os.statvfs(os.path.dirname(database) or ".")
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < MIN_FREE_BYTES
