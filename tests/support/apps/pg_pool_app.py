"""The handler of the postgres source pool tests (``pg_pool_app:handle``).

Each call is logged as ``<pid> <payload> <time.monotonic()>`` in ``handled.log`` of the
root (the worker's working directory), one write a line; while the root has a file
``hang``, the handler blocks (a task in flight that a test can kill its pool under).
"""

import os
import time


def handle(payload):
    with open("handled.log", "a") as log:
        log.write(f"{os.getpid()} {payload} {time.monotonic()}\n")
    if os.path.exists("hang"):
        time.sleep(60)
    return payload
