"""The quick start's application: one handler for the messages of the SQLite queue.

Each message's payload is a piece of text; handling it means counting its letters and
saying so on stdout (a worker's output goes straight to the supervisor's terminal). A
payload starting with ``fail`` raises, to show retries and the ``failed`` count.
"""

from __future__ import annotations

import os


def handle(payload: str) -> int:
    """Handle one message; the return value is the task's result."""
    if payload.startswith("fail"):
        msg = "this payload always fails"
        raise ValueError(msg)
    letters = sum(ch.isalpha() for ch in payload)
    print(f"worker pid {os.getpid()}: {payload!r} has {letters} letters", flush=True)
    return letters
