"""The canonical lifecycle files of a project root (seed 000); not configurable.

Every path is relative to the project root. Two locks decide liveness, never the other
files: the guardian holds the lock for the whole life of a worker generation, cleanup
included, and every process of the generation holds the fence, which outlives a killed
guardian. Both free means "not running"; a free lock with a held fence, "draining".
"""

from __future__ import annotations

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final

RUNTIME_DIR: Final = "var/tmp"
"""Where the lifecycle files live."""

LOCK_PATH: Final = "var/tmp/worker.lock"
"""The lifecycle lock, held by the guardian."""

FENCE_PATH: Final = "var/tmp/worker.generation.lock"
"""The generation fence: held shared by every worker of a generation through one inherited
descriptor, so it outlives a killed guardian until the last worker is gone. A start is
refused while it is held, and ``status`` reports such a draining generation."""

LOCATOR_PATH: Final = "var/tmp/worker.lifecycle.json"
"""The private locator (mode 0600): endpoint, credential, stop budgets."""

LOCATOR_TMP_PATH: Final = "var/tmp/worker.lifecycle.json.tmp"
"""The fixed temporary file the locator is written to before its atomic rename."""

ENDPOINT_KEY_PATH: Final = "var/tmp/worker.endpoint-key"
"""The per-root secret keying the public endpoint hash (mode 0600)."""

GENERATIONS_DIR: Final = "var/generations"
"""Where immutable generations are published; ``current`` selects one."""

IPC_DIR: Final = "var/tmp/worker.ipc"
"""The private directory (mode 0700) of a ``unixsock`` process pool's message sockets,
one per entry worker; created for a generation and removed with it."""

CANONICAL_PATHS: Final = (
    LOCK_PATH,
    FENCE_PATH,
    LOCATOR_PATH,
    LOCATOR_TMP_PATH,
    ENDPOINT_KEY_PATH,
    GENERATIONS_DIR,
    IPC_DIR,
)
"""Paths no configurable runtime path may equal or overlap."""
