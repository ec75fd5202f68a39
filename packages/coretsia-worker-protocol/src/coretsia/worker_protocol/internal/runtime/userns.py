"""A user namespace of the guardian's own: the ``namespace`` level without root (Linux).

Making a PID or mount namespace takes ``CAP_SYS_ADMIN``. An unprivileged user gets it,
where the kernel allows user namespaces, inside a user namespace of its own: its creator
holds every capability there, and the PID and mount namespaces it then makes belong to
it. So a guardian without ``CAP_SYS_ADMIN`` enters one (:func:`enter`) and then makes
its generation's PID namespace exactly as root does (:mod:`.pidns`). Three kernel rules
shape how:

- ``unshare(CLONE_NEWUSER)`` is refused (EINVAL) to a multithreaded process, and trio
  and the spawner thread make the guardian one: it enters right after ``hello``, still
  single-threaded; the threads it starts later share the namespace and its capabilities.
- The ids are mapped onto themselves (one line each: the user's real uid and gid, the
  most an unprivileged writer may map, and ``setgroups`` denied first, as the kernel
  requires of one). So the workers keep the worker contract: same uid and gid as the
  operator, files created on disk owned by them, the same permission checks (the kernel
  checks the real ids; supplementary groups still apply, shown as the overflow gid).
  Kept out: set-user-ID programs and file capabilities (ignored inside).
- ``execve`` keeps no capability of a non-root user, so the namespace's init, which must
  mount its ``/proc``, gets ``CAP_SYS_ADMIN`` as an ambient capability raised on the
  spawner thread for that one spawn (:func:`ambient_admin`); every other child starts
  with none. The guardian itself keeps ``CAP_SYS_ADMIN`` only (in its namespace alone).

The supervisor cannot try any of this on itself (it is multithreaded too), so
:func:`available` runs the whole path in a throwaway interpreter (``python -m`` this
module): about as long as an interpreter's start, at ``start``, and only for a user
without ``CAP_SYS_ADMIN``.

Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from typing import Final

from coretsia.worker_protocol.internal.runtime import pidns
from coretsia.worker_protocol.internal.runtime.pidns import check, libc

CLONE_NEWUSER: Final = 0x10000000
CAP_SYS_ADMIN: Final = 21
_CAP_VERSION_3: Final = 0x20080522
_PR_CAP_AMBIENT: Final = 47
_PR_CAP_AMBIENT_RAISE: Final = 2
_PR_CAP_AMBIENT_CLEAR_ALL: Final = 4
_ADMIN_MASK: Final = 1 << CAP_SYS_ADMIN
_PROBE_TIMEOUT_S: Final = 10.0


def has_admin() -> bool:
    """Whether this process holds ``CAP_SYS_ADMIN`` (effective) in its user namespace."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & _ADMIN_MASK)
    except (OSError, ValueError):
        return False
    return False


def enter() -> None:
    """Move this single-threaded process into a new user namespace, its ids mapped onto
    themselves, keeping ``CAP_SYS_ADMIN`` there and nothing else; OSError if refused."""
    uid, gid = os.geteuid(), os.getegid()
    check(libc().unshare(CLONE_NEWUSER))
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _set_caps(effective=_ADMIN_MASK, permitted=_ADMIN_MASK, inheritable=0)


def ambient_admin(raised: bool) -> None:
    """Raise (or clear again) ``CAP_SYS_ADMIN`` in the calling *thread*'s ambient set, so
    that a non-root child keeps it across ``execve``; OSError if refused."""
    c = libc()
    if raised:
        _set_caps(effective=_ADMIN_MASK, permitted=_ADMIN_MASK, inheritable=_ADMIN_MASK)
        check(c.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0))
    else:
        check(c.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0))
        _set_caps(effective=_ADMIN_MASK, permitted=_ADMIN_MASK, inheritable=0)


def available() -> bool:
    """Whether this user may make a generation's PID namespace inside a user namespace.

    Tried whole (:func:`_probe`) in a throwaway interpreter: a kernel or a security
    policy may refuse any step (user namespaces off, no capability granted inside them,
    ``/proc`` not mountable), and a refusal here is a level ``start`` does not offer.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        done = subprocess.run(
            [sys.executable, "-m", __name__],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _probe() -> int:
    """The guardian's and its init's steps, in this process and a child: 0 if all work."""
    try:
        enter()
        pidns.unshare_for_children()
        ambient_admin(raised=True)
    except OSError:
        return 1
    child = os.fork()
    if child == 0:  # the new namespace's PID 1
        try:
            pidns.mount_proc()
        except OSError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    return 0 if os.waitstatus_to_exitcode(status) == 0 else 1


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as file:
        file.write(text)


def _set_caps(*, effective: int, permitted: int, inheritable: int) -> None:
    """``capset(2)`` on the calling thread (the first 32 capabilities; the rest cleared)."""

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Data(ctypes.Structure):
        _fields_ = (
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        )

    data = (Data * 2)(Data(effective, permitted, inheritable), Data(0, 0, 0))
    check(libc().capset(ctypes.byref(Header(_CAP_VERSION_3, 0)), data))


if __name__ == "__main__":
    sys.exit(_probe())
