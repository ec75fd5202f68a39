"""The one rule for a root-relative path that the protocol and the configuration accept.

Seed 000 lists the rules for runtime paths and for the launcher's artifact root; they are
the same rule, so there is one function. A safe path is relative, uses ``/``, and has no
segment that could climb out of the root, name a stream wrapper or hide from a listing.
"""

from __future__ import annotations

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final

MAX_PATH_CHARS: Final = 200
"""Longest accepted relative path; UNIX socket paths must also fit ``sun_path``."""


def is_safe_relative_path(path: str) -> bool:
    """True when ``path`` is a plain root-relative path (see the module docstring)."""
    if not 0 < len(path) <= MAX_PATH_CHARS:
        return False
    if path[0] == "/" or "\\" in path or "://" in path or ":" in path.split("/", 1)[0]:
        return False
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        return False
    for segment in path.split("/"):
        if segment in ("", ".", "..") or segment.startswith("@"):
            return False
    return True


def paths_overlap(a: str, b: str) -> bool:
    """True when two safe relative paths are equal or one lies inside the other."""
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")
