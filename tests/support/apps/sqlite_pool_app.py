"""The handler of the sqlite source pool tests (``sqlite_pool_app:handle``)."""

import os
import time


def handle(payload):
    with open("handled.log", "a") as log:
        log.write(f"{os.getpid()} {payload}\n")
    if payload == "bad":
        raise ValueError("bad payload")
    if payload == "slow" and os.path.exists("hang"):
        time.sleep(60)
    return payload
