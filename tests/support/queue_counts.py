"""The SQLite queue's message counts by state, as ``SqliteQueue.stats`` returns them: one
call names only the states a test expects to be non-empty.
"""

from __future__ import annotations


def counts(pending: int = 0, in_flight: int = 0, done: int = 0, failed: int = 0) -> dict[str, int]:
    """The ``stats()`` of a queue holding these many messages in each state."""
    return {"pending": pending, "in_flight": in_flight, "done": done, "failed": failed}
