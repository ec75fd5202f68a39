"""Worker lives that end where they choose, for tests/lifecycle/test_lifecycle_lives.py.

Each worker of the ``[[process]]`` entry ``lives_app:life`` draws how its life ends and
appends one fixed-width line to ``lives.log`` saying so (slot, pid, where, exit kind),
then ends that way: ``before-ready`` at this module's import (a worker imports its entry
before its ``ready`` frame), ``after-ready`` as soon as the entry runs, ``mid-frame``
after writing part of a frame on its channel, ``mid-task`` after a short random task.
The first life of each slot always gets ready (a pool's start waits for each entry's
first readiness). Once ``LIVES`` (environment) lives are written, the next worker to run
asks the pool to stop and waits for it.
"""

import os
import random
import signal
import sys
import time

from coretsia.worker_protocol.worker_channel import TaskFailed, encode_worker_frame

LINE = 48
KINDS = ("exit-0", "exit-nonzero", "signal-kill")


def _arg(name):
    prefix = f"--coretsia-worker-{name}="
    return int(next(arg[len(prefix) :] for arg in sys.argv if arg.startswith(prefix)))


def _lives():
    try:
        return os.stat("lives.log").st_size // LINE
    except FileNotFoundError:
        return 0


def _record(where):
    line = f"{SLOT} {os.getpid()} {where} {KIND}".ljust(LINE - 1) + "\n"
    fd = os.open("lives.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, line.encode())
    os.close(fd)


def _end():
    if KIND == "signal-kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(0 if KIND == "exit-0" else 3)


def _first_life():
    try:
        os.close(os.open(f"first-{SLOT}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    return True


KIND = random.choice(KINDS)
WHERE = random.choice(("after-ready", "mid-frame", "mid-task"))
WORKER = any(arg.startswith("--coretsia-worker-slot=") for arg in sys.argv)
SLOT = _arg("slot") if WORKER else -1  # the supervisor imports this module too, to check it
BEFORE_READY = WORKER and not _first_life() and random.random() < 0.25
if BEFORE_READY and _lives() < int(os.environ["LIVES"]):
    _record("before-ready")
    _end()


def life(pool, worker_id):
    if _lives() >= int(os.environ["LIVES"]):
        pool.shutdown()
        pool.wait_for_stop(None)
        return
    _record(WHERE)
    if WHERE == "mid-frame":
        os.write(_arg("channel-fd"), encode_worker_frame(TaskFailed(error_type="Cut"))[:-7])
    elif WHERE == "mid-task":
        time.sleep(random.uniform(0, 0.02))
    _end()
