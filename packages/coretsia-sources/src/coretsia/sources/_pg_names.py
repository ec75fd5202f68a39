"""How a PostgreSQL queue is named: one rule for the source's option and the command.

A queue's name becomes part of its notification channel (``coretsia_queue.<name>``), an
identifier of at most 63 bytes. Standard library only: the command's parser (and so the
man page build) uses it.
"""

from __future__ import annotations

from typing import Final

DEFAULT_QUEUE: Final = "default"
MAX_QUEUE_NAME: Final = 40
"""A queue name's longest length: its channel must stay an identifier of 63 bytes."""
QUEUE_NAME_CHARS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
)


def valid_queue_name(name: object) -> bool:
    """True for 1 to :data:`MAX_QUEUE_NAME` characters of ``[A-Za-z0-9_.-]``."""
    return (
        isinstance(name, str) and 0 < len(name) <= MAX_QUEUE_NAME and set(name) <= QUEUE_NAME_CHARS
    )
