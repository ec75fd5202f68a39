"""A PID namespace per generation (Linux): the ``namespace`` containment level.

When the init (PID 1) of a PID namespace dies, the kernel SIGKILLs every other process
in it; nothing inside can escape that by forking, ``setsid`` or closing descriptors. The
guardian makes one per generation from its spawner thread: ``unshare(CLONE_NEWPID |
CLONE_NEWNS)`` there changes only that thread's namespaces for its future children
(Linux keeps namespaces per thread), so the guardian itself, its trio thread and its
psutil view stay in the original namespaces, while everything the spawner thread
starts is born inside. Its first child is the namespace's init (``coretsia.guardian
.pid_init``), which mounts a ``/proc`` of the new namespace in the new mount namespace,
so that ``os.getpid()`` and ``/proc/<pid>`` agree for the workers (psutil relies on it).

Python 3.10 and 3.11 have no ``os.unshare`` (3.12 has it), so this calls ``unshare(2)``
and ``mount(2)`` through ctypes, for every version alike. It takes ``CAP_SYS_ADMIN``:
root has it; any other user gets it in a user namespace of the guardian's own
(:mod:`.userns`).

Shared by the supervisor (is the level available?), the guardian's spawner thread and
the init. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Final

CLONE_NEWNS: Final = 0x00020000
CLONE_NEWPID: Final = 0x20000000
_MS_NOSUID: Final = 2
_MS_NODEV: Final = 4
_MS_NOEXEC: Final = 8
_MS_REC: Final = 16384
_MS_PRIVATE: Final = 1 << 18


def libc() -> ctypes.CDLL:
    """The C library, with ``errno`` kept for :func:`check`."""
    return ctypes.CDLL(None, use_errno=True)


def check(result: int) -> None:
    """OSError (with the call's ``errno``) unless a libc call returned 0."""
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def unshare_for_children() -> None:
    """Make the calling *thread*'s future children start in a new PID and mount namespace.

    Mounts are made private in the new mount namespace first, so the ``/proc`` the init
    mounts never propagates back to the host. OSError if the kernel refuses.
    """
    c = libc()
    check(c.unshare(CLONE_NEWNS | CLONE_NEWPID))
    check(c.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))


def mount_proc() -> None:
    """Mount a ``/proc`` of our own PID namespace (the init, inside, does it)."""
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    check(libc().mount(b"proc", b"/proc", b"proc", flags, None))


def available() -> bool:
    """Whether this process may make a PID namespace: tried in a throwaway thread.

    The thread's namespaces change and then die with it; this process's do not.
    """
    if not sys.platform.startswith("linux"):
        return False
    outcome: list[bool] = []

    def attempt() -> None:
        try:
            unshare_for_children()
        except (OSError, AttributeError):
            outcome.append(False)
        else:
            outcome.append(True)

    thread = threading.Thread(target=attempt, name="coretsia-pidns-probe")
    thread.start()
    thread.join()
    return outcome == [True]
