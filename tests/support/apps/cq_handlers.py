"""Handlers for the SQLite source tests (``cq_handlers:<name>``), imported in the test
process and in child workers alike."""

import time

calls: list[str] = []
"""What ``record`` was given, in this process."""


def record(payload):
    calls.append(payload)
    return payload.upper()


def explode(payload):
    raise RuntimeError("boom: " + payload)


def hang(payload):
    time.sleep(3600)


not_callable = 42
