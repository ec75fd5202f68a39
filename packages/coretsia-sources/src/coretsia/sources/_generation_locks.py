"""Which generations of a queue are alive: a shared ``flock`` held by each of their workers.

Recovery must take back the leases of dead workers only. A generation id alone cannot
tell: another pool (another project root) on the same database runs a different
generation whose leases are very much alive. So liveness is asked of the kernel:

* every process that leases for generation *G* holds ``flock(LOCK_SH)`` on
  ``<db>.generations/<G>.lock`` (directory ``0700``, file ``0600``) from before its first
  lease until it closes the queue or dies (the kernel drops the lock of a SIGKILLed
  process, so a crash can never leave a generation looking alive);
* a recoverer takes back *G*'s leases only while it holds ``flock(LOCK_EX | LOCK_NB)``
  on that file, which succeeds only if no process holds it shared: no live worker of
  *G* exists, and none can start leasing while the exclusive lock is held. A missing
  file is created and locked the same way (absent means dead; see below). The
  recoverer removes the file, still holding the lock, after its transaction committed.

The races, and why each is safe:

* *A file is removed while a worker of G opens it* (G's last worker exited, a new one
  is booting, a recoverer claims G in between). The worker would hold a lock on an
  unlinked file that nobody else can see. So after locking, the worker checks that the
  path still names the file it locked (same device and inode) and otherwise starts
  over. A file is only ever removed under its exclusive lock, so once the check passes
  the path keeps naming the worker's file until the worker lets go. Hence: a live
  worker's file always exists, and a missing file means no live worker.
* *A worker of G boots while a recoverer holds G's exclusive lock.* Its shared lock
  waits (bounded by the queue's busy timeout) until the recoverer is done. G had no
  live worker, so what the recoverer took back was dead; the new worker has leased
  nothing yet.
* *Two recoverers at once.* Only one gets the exclusive lock; the other sees the
  generation as alive and leaves it, which is the safe mistake (the winner recovers).
* *The same process.* ``flock`` locks belong to an open file description, not to a
  process, so a second queue object in one process sees the first one's lock too (and
  closing an unrelated descriptor of the file releases nothing, unlike ``fcntl`` locks).

Where ``fcntl.flock`` does not exist (not POSIX), nothing is locked and every other
generation counts as dead: the old rule, safe only with one pool per database.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import time
from collections.abc import Iterable, Iterator
from typing import Final

from coretsia.sources._private_files import make_private_dirs, open_private

try:
    import fcntl

    _FLOCK: bool = True
except ImportError:  # pragma: no cover - not POSIX
    _FLOCK = False

SUFFIX: Final = ".generations"
"""``<db>.generations``: the directory of the lock files, beside the database."""
_LOCK_SUFFIX: Final = ".lock"
_NAME_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
)  # spelled out: `string` imports `re`, which the worker's boot does not need
_MAX_NAME: Final = 100


def supported() -> bool:
    """True where liveness can be asked of the kernel (``fcntl.flock`` exists)."""
    return _FLOCK


def file_name(generation: str) -> str:
    """The lock file's name: the id itself when it is a plain name, else a digest of it."""
    if (
        0 < len(generation) <= _MAX_NAME
        and not generation.startswith(".")
        and _NAME_CHARS.issuperset(generation)
    ):
        return generation + _LOCK_SUFFIX
    digest = hashlib.sha256(generation.encode("utf-8", "surrogatepass")).hexdigest()
    return f"+{digest}{_LOCK_SUFFIX}"  # '+' is never in a plain name: no collision


class GenerationLocks:
    """The lock files of one database: hold our generations, claim dead ones."""

    def __init__(self, db_path: str, timeout: float) -> None:
        self.directory = db_path + SUFFIX
        self._timeout = timeout
        self._held: dict[str, int] = {}

    def hold(self, generation: str) -> None:
        """Mark this process a live worker of ``generation`` until :meth:`release_all`.

        Raises :class:`TimeoutError` if a recoverer keeps the file locked for longer than
        the timeout (it holds it for one short transaction).
        """
        if not _FLOCK or generation in self._held:
            return
        make_private_dirs(self.directory)
        path = os.path.join(self.directory, file_name(generation))
        deadline = time.monotonic() + self._timeout
        while True:
            fd = open_private(path)
            try:
                _wait_shared(fd, deadline)
                if _names(path, fd):
                    self._held[generation] = fd
                    return
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # a recoverer removed the file we locked: lock the new one

    def is_held(self, generation: str) -> bool:
        """True once :meth:`hold` succeeded for ``generation`` (or locks are unsupported)."""
        return not _FLOCK or generation in self._held

    @contextlib.contextmanager
    def claim_dead(self, generations: Iterable[str | None]) -> Iterator[list[str | None]]:
        """The generations among ``generations`` with no live worker, kept so for the block.

        Each one's file is locked exclusively for the whole block (so none of its workers
        can start leasing), and removed at the end if the block succeeded. ``None`` (a
        lease without a generation) cannot be held by anyone: it is always dead.
        """
        claimed: dict[str | None, int] = {}
        try:
            for generation in generations:
                if generation in self._held or generation in claimed:
                    continue
                if generation is None or not _FLOCK:
                    claimed[generation] = -1
                    continue
                make_private_dirs(self.directory)
                fd = _try_exclusive(os.path.join(self.directory, file_name(generation)))
                if fd is not None:
                    claimed[generation] = fd
            yield list(claimed)
            for generation, fd in claimed.items():
                if generation is not None and fd >= 0:
                    _remove(os.path.join(self.directory, file_name(generation)))
        finally:
            for fd in claimed.values():
                if fd >= 0:
                    os.close(fd)

    def sweep(self) -> int:
        """Remove the files of dead generations (other than ours); how many were removed.

        Called after recovery: a generation whose workers all died without a lease left
        behind leaves its file, and nothing else would ever remove it.
        """
        if not _FLOCK:
            return 0
        try:
            names = os.listdir(self.directory)
        except OSError:
            return 0
        ours = {file_name(generation) for generation in self._held}
        removed = 0
        for name in names:
            if not name.endswith(_LOCK_SUFFIX) or name in ours:
                continue
            path = os.path.join(self.directory, name)
            fd = _try_exclusive(path, create=False)
            if fd is not None:
                try:
                    _remove(path)
                    removed += 1
                finally:
                    os.close(fd)
        return removed

    def release_all(self) -> None:
        """Let go of every held generation; remove a file no other worker holds. Idempotent.

        ``flock`` converts shared to exclusive non-atomically (it may drop the shared
        lock first); that is fine here, since we are letting go anyway.
        """
        held, self._held = self._held, {}
        for generation, fd in held.items():
            try:
                if _FLOCK and _try_lock(fd, fcntl.LOCK_EX):
                    path = os.path.join(self.directory, file_name(generation))
                    if _names(path, fd):
                        _remove(path)
            except OSError:
                pass  # best effort: a stale file is swept by the next recovery
            finally:
                os.close(fd)


def _wait_shared(fd: int, deadline: float) -> None:
    """Take the shared lock, retrying briefly while a recoverer holds it exclusively."""
    while not _try_lock(fd, fcntl.LOCK_SH):
        if time.monotonic() > deadline:
            raise TimeoutError("a generation's lock file stayed locked by a recoverer")
        time.sleep(0.001 + random.random() * 0.004)


def _try_lock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _try_exclusive(path: str, *, create: bool = True) -> int | None:
    """A descriptor holding ``path``'s exclusive lock, or None if a live worker holds it.

    A file that changed under us (removed or replaced between open and lock) is treated
    as alive: someone else is handling it, and leaving a lease alone is the safe mistake.
    """
    try:
        fd = open_private(path, create=create)
    except FileNotFoundError:
        return None
    try:
        if _try_lock(fd, fcntl.LOCK_EX) and _names(path, fd):
            return fd
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def _names(path: str, fd: int) -> bool:
    """True if ``path`` still names the file open as ``fd``."""
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (opened.st_dev, opened.st_ino)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
