"""A plain module-level process entry, for the tests that need a callable target besides the
classes they declare.
"""

from __future__ import annotations

from typing import Any


def loaded_work(pool: Any, worker_id: int) -> None:
    """A module-level entry for pre-registration."""
