"""The handlers of the SQLite queue lifecycle tests (``queue_app:<handler>`` in a root).

Each run appends ``<payload> <pid>`` to ``handled.log``.
"""

import os
import select
import sys
import time


def handle(payload):
    time.sleep(0.01)  # a little real work: the load spreads over every worker
    line = f"{payload} {os.getpid()}\n"
    fd = os.open("handled.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return payload


def until_stop(payload):
    """Runs until the pool's stop is requested, then works on a little: in flight at stop."""
    flag = "--coretsia-worker-stop-fd="
    stop_fd = int(next(a for a in sys.argv if a.startswith(flag))[len(flag) :])
    handle(payload)  # the start, in handled.log
    seen = select.select([stop_fd], [], [], 30)[0]  # bounded: the test stops at once
    time.sleep(0.5)
    with open("finished.log", "a") as log:
        log.write("stop-seen" if seen else "timeout")
    return payload


def until_go(payload):
    """Runs until the file ``go`` exists in the root (bounded), then settles: in flight
    while the test changes the world (fills the disk)."""
    handle(payload)
    deadline = time.monotonic() + 30
    while not os.path.exists("go") and time.monotonic() < deadline:
        time.sleep(0.01)
    return payload
