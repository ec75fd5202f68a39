"""The handler of the load tests (``load_app:handle`` in a root).

One line per attempt in ``attempts.log``, written in one call (O_APPEND): payload, pid,
start and end on the monotonic clock, which every process of the machine shares.
"""

import os
import time

_LOG = os.open("attempts.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def handle(payload):
    started = time.monotonic()
    if payload.startswith("sleep"):
        time.sleep(0.05)
    os.write(_LOG, f"{payload} {os.getpid()} {started:.6f} {time.monotonic():.6f}\n".encode())
