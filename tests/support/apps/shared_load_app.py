"""The handler of two pools sharing one database (``shared_load_app:handle``).

Each pool logs to its own ``LOAD_LOG``; the ``gate`` task holds its lease until the test
opens the FIFO at ``LOAD_GATE`` for writing and closes it.
"""

import os
import time

_LOG = os.open(os.environ["LOAD_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def handle(payload):
    started = time.monotonic()
    if payload == "gate":
        os.write(_LOG, b"gate-taken\n")
        fd = os.open(os.environ["LOAD_GATE"], os.O_RDONLY)
        try:
            os.read(fd, 1)
        finally:
            os.close(fd)
    else:
        time.sleep(0.01)
    line = f"{payload} {os.getpid()} {started:.6f} {time.monotonic():.6f}\n"
    os.write(_LOG, line.encode())
