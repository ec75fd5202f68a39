"""A task source that reports what its worker inherited (``fresh_app:report`` in a root).

Written once per worker, at the source's creation (before ``ready``), as
``fresh-<slot>.json`` in the root: what a fork would share with its siblings and an
executed interpreter would not (the per-worker freshness of the fork server mode).
"""

import ctypes
import json
import os
import random
import signal
import sys
import threading
import time

# Installed beside it in every test root (not where the type checker looks).
from lifecycle_app import IdleSource  # type: ignore[import-not-found]


def _disposition(sig):
    handler = signal.getsignal(sig)
    if handler is signal.SIG_DFL:
        return "default"
    if handler is signal.SIG_IGN:
        return "ignore"
    return getattr(handler, "__name__", "handler")


def _catchable():
    uncatchable = (signal.SIGKILL, signal.SIGSTOP)
    named = [s for s in signal.valid_signals() if isinstance(s, signal.Signals)]
    return [s for s in named if s not in uncatchable]


def _blocked():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("SigBlk:"):
                return int(line.split()[1], 16)
    return None


_GET_ROBUST_LIST = {"x86_64": 274, "aarch64": 100}


def _thread_clock():
    """Whether the C library's cached id of this thread is this thread's: its CPU clock,
    which glibc makes from that id, reads (another process's thread is refused)."""
    try:
        time.clock_gettime(time.pthread_getcpuclockid(threading.get_ident()))
    except OSError:
        return False
    return True


def _robust_list():
    """Whether this thread has a robust-mutex list registered with the kernel (glibc does
    it at start, and again in a forked child: the kernel drops it); None if unknown here."""
    number = _GET_ROBUST_LIST.get(os.uname().machine)
    if number is None:
        return None
    head, size = ctypes.c_void_p(), ctypes.c_size_t()
    libc = ctypes.CDLL(None)
    libc.syscall(ctypes.c_long(number), ctypes.c_long(0), ctypes.byref(head), ctypes.byref(size))
    return bool(head.value)


def report(ctx):
    own = f"/proc/{os.getpid()}/fd"  # the listing's own descriptor
    targets = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's, closed since
    fds = sorted(fd for fd, target in targets.items() if target != own)
    facts = {
        "pid": os.getpid(),
        "random": random.random(),
        "hash": hash("coretsia"),
        "argv": sys.argv,
        "signals": {sig.name: _disposition(sig) for sig in _catchable()},
        "blocked": _blocked(),
        "threads": threading.active_count(),
        "tasks": len(os.listdir("/proc/self/task")),
        "fds": fds,
        "session": os.getsid(0) == os.getpid(),
        "thread_clock": _thread_clock(),
        "robust_list": _robust_list(),
    }
    path = os.path.join(os.getcwd(), f"fresh-{ctx.slot}.json")
    with open(path + ".tmp", "w") as out:
        json.dump(facts, out)
    os.rename(path + ".tmp", path)
    return IdleSource(ctx)
