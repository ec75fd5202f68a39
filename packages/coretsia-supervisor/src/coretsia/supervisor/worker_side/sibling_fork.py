"""A fork whose child is its parent's sibling: ``clone(CLONE_PARENT)``. Internal.

The fork server (:mod:`coretsia.supervisor.worker_side.fork_server`) forks each worker with it, so
that the worker is born the guardian's child (the server's parent is the guardian): no
intermediate to exit and no re-parenting, which also holds inside a PID namespace,
where an orphan would go to the namespace's init instead (``CLONE_PARENT`` is refused
only to a namespace's init, and the server is never one). Python has no ``os.clone``:
this is the ``clone`` system call through ctypes, on the architectures whose number and
argument order are listed here (x86_64, aarch64); elsewhere :meth:`SiblingFork.prepare`
gives None and the server keeps its intermediate.

What ``os.fork`` does around glibc's ``fork`` is done here around the system call:
``PyOS_BeforeFork``, then ``PyOS_AfterFork_Child`` or ``PyOS_AfterFork_Parent`` (the
import lock, the GIL and ``threading`` re-initialised in the child, and every
``os.register_at_fork`` hook, such as ``random``'s reseed). The call goes through
``ctypes.PyDLL``, which keeps the GIL held across it as ``os.fork`` does. What glibc's
``fork`` does beyond the system call, and how each is covered:

- the thread's cached tid (``pthread_self()->tid``, which glibc uses for recursive and
  PI mutex owners, ``pthread_setaffinity_np`` and the like): set in the child by the
  kernel, with ``CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID`` at the address glibc
  registered at start (read back with ``PR_GET_TID_ADDRESS``), exactly as glibc's own
  ``fork`` passes them; without that ``prctl`` (a kernel without
  ``CONFIG_CHECKPOINT_RESTORE``) this fork is not offered at all;
- the robust-mutex list, which the kernel drops in a new process: registered again in
  the child at the address the parent's was (``get_robust_list``, read once), as glibc
  does; it is empty, since a single-threaded server holds no robust mutex;
- glibc's internal locks (malloc arenas, the stdio list, the loader's), which its
  ``fork`` takes so that no *other* thread holds one at the fork: the server runs no
  other thread (it refuses to serve with one), so none is held and the child's copies
  are free;
- the C libraries' ``pthread_atfork`` handlers: not run. The boot modules load none
  that registers one (CPython uses its own hooks, run above); a ``preload`` module's
  native library could, and would then see a fork it was not told of (OpenSSL's random
  generator is not such a case: it detects a fork by its pid).

Standard library only, like the server.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Final

_SYSCALLS: Final = {"x86_64": (56, 273, 274), "aarch64": (220, 99, 100)}
"""``clone``, ``set_robust_list`` and ``get_robust_list`` per machine."""
_TLS_BEFORE_CHILD_TID: Final = frozenset({"aarch64"})
"""Machines whose ``clone`` takes (flags, stack, parent tid, tls, child tid); x86_64 takes
the child tid before the tls (``clone(2)``, "C library/kernel differences")."""
_PR_GET_TID_ADDRESS: Final = 40
_CLONE_PARENT: Final = 0x00008000
_CLONE_CHILD_CLEARTID: Final = 0x00200000
_CLONE_CHILD_SETTID: Final = 0x01000000
_SIGCHLD: Final = 17
"""On both machines; with ``CLONE_PARENT`` the kernel takes the caller's own exit signal."""


def _machine() -> str | None:
    """This machine, if :data:`_SYSCALLS` knows it (and it runs Linux); else None."""
    machine = os.uname().machine
    if not sys.platform.startswith("linux") or machine not in _SYSCALLS:
        return None
    return machine


class SiblingFork:
    """Everything a fork needs, looked up once (the server forks hundreds of times)."""

    def __init__(self, libc: ctypes.PyDLL, machine: str, tid_address: int) -> None:
        self._libc = libc
        self._api = ctypes.pythonapi
        clone, set_robust_list, get_robust_list = _SYSCALLS[machine]
        self._clone = ctypes.c_long(clone)
        self._set_robust_list = ctypes.c_long(set_robust_list)
        self._flags = ctypes.c_ulong(
            _CLONE_PARENT | _CLONE_CHILD_SETTID | _CLONE_CHILD_CLEARTID | _SIGCHLD
        )
        tid, null = ctypes.c_void_p(tid_address), ctypes.c_void_p(0)
        # The last two of stack, parent tid, child tid and tls (in this machine's order).
        self._tail = (null, tid) if machine in _TLS_BEFORE_CHILD_TID else (tid, null)
        self._robust_head = ctypes.c_void_p()
        self._robust_len = ctypes.c_size_t()
        got = libc.syscall(
            ctypes.c_long(get_robust_list),
            ctypes.c_long(0),
            ctypes.byref(self._robust_head),
            ctypes.byref(self._robust_len),
        )
        if got != 0:
            raise OSError(ctypes.get_errno(), "get_robust_list")

    @classmethod
    def prepare(cls) -> SiblingFork | None:
        """None where this fork is not offered (machine, kernel); OSError never."""
        machine = _machine()
        if machine is None:
            return None
        libc = ctypes.PyDLL(None, use_errno=True)
        address = ctypes.c_void_p()
        zero = ctypes.c_ulong(0)
        got = libc.prctl(_PR_GET_TID_ADDRESS, ctypes.byref(address), zero, zero, zero)
        if got != 0 or not address.value:
            return None
        try:
            return cls(libc, machine, address.value)
        except OSError:
            return None

    def fork(self) -> int:
        """Like ``os.fork`` (0 in the child, its pid in the parent; OSError if refused),
        except that the child's parent is this process's parent."""
        sys.audit("os.fork")
        null = ctypes.c_void_p(0)
        self._api.PyOS_BeforeFork()
        pid = self._libc.syscall(self._clone, self._flags, null, null, *self._tail)
        if pid == 0:
            self._api.PyOS_AfterFork_Child()
            self._libc.syscall(self._set_robust_list, self._robust_head, self._robust_len)
            return 0
        errno = ctypes.get_errno()
        self._api.PyOS_AfterFork_Parent()
        if pid < 0:
            raise OSError(errno, os.strerror(errno))
        return int(pid)


def available() -> bool:
    """Whether this process could fork a sibling (what the supervisor checks at ``start``)."""
    return SiblingFork.prepare() is not None
