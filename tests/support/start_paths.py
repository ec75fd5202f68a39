"""The modules on the paths with a start-up budget: a worker's boot and the status probe.

A worker's boot is what the launcher imports before the application (its module, the
functions of ``main`` that import as they go, the task sources and runtime entrypoints
the distributions declare, and a process entry's runner); the probe is
``coretsia-supervisor status``. Their budgets are in ``docs/performance.md`` ("Records:
attrs off the start-up paths"); records on these paths use the protocol's plain base
(:mod:`coretsia.worker_protocol.records`), which imports nothing. The man-page build hooks
(``packages/*/hatch_build.py``) load their parser modules with none of the packages'
dependencies: those stay on the standard library too.

The sets are computed by importing these entries in a fresh interpreter;
``tests/supervisor/launcher/test_launcher_boot.py`` checks that a real worker's boot
imports nothing of Coretsia outside :data:`BOOT_ENTRIES`' set.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "packages"

BOOT_ENTRIES = (
    "coretsia.supervisor.worker_side.launcher",
    # What main() and its steps import inside functions, in boot order.
    "coretsia.supervisor.worker_side.channel",
    "coretsia.supervisor.worker_side.contract",
    "coretsia.supervisor.generation.published",
    "coretsia.supervisor.worker_side.stop_signal",
    "coretsia.supervisor.worker_side.task_worker",
    "coretsia.supervisor.worker_side.runtime_guard",
    "coretsia.supervisor.worker_side.task_loop",
    "coretsia.supervisor.worker_side.heartbeat",
    "coretsia.supervisor.worker_side.memory",
    "coretsia.worker_protocol.worker_conversation",
    "coretsia.supervisor.worker_side.entry_worker",
    "coretsia.supervisor.process_entries.record",  # the generation's process entries, decoded
    # postgres_source.make_source imports the worker's side of the source.
    "coretsia.sources._pg_worker_source",
)
"""A worker's boot up to its application; the declared task sources and runtime
entrypoints (:func:`declared_boot_targets`) come with it."""

PROBE_ENTRIES = (
    "coretsia.supervisor.cli",
    "coretsia.worker_protocol.client",
    "coretsia.worker_protocol.control",
)
"""``coretsia-supervisor status``: the command and the client it answers with."""

_BOOT_GROUPS = ("coretsia.worker.task_sources", "coretsia.worker.runtime_entrypoints")


def declared_boot_targets() -> tuple[str, ...]:
    """The modules of every task source and runtime entrypoint the packages declare."""
    modules = []
    for pyproject in sorted(PACKAGES.glob("*/pyproject.toml")):
        groups = tomllib.loads(pyproject.read_text()).get("project", {}).get("entry-points", {})
        for group in _BOOT_GROUPS:
            modules += [target.partition(":")[0] for target in groups.get(group, {}).values()]
    return tuple(modules)


def build_hook_modules() -> tuple[str, ...]:
    """The Coretsia modules the packages' build hooks import (their man pages' parsers)."""
    found: set[str] = set()
    for hook in PACKAGES.glob("*/hatch_build.py"):
        found |= {_module_of(name) for name in re.findall(r"coretsia(?:\.\w+)+", hook.read_text())}
    return tuple(sorted(found))


def _module_of(dotted: str) -> str:
    """The longest prefix of ``dotted`` that is a module of the packages (a name in a
    docstring may go on to an attribute)."""
    parts = dotted.split(".")
    while len(parts) > 1:
        path = "/".join(parts)
        if any(PACKAGES.glob(f"*/src/{path}.py")) or any(
            PACKAGES.glob(f"*/src/{path}/__init__.py")
        ):
            return ".".join(parts)
        parts.pop()
    return dotted


def imported_by(entries: tuple[str, ...]) -> set[str]:
    """Every module a fresh interpreter holds after importing ``entries``."""
    script = (
        "import importlib, json, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *entries],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(result.stdout))


def boot_modules() -> set[str]:
    """What a worker may import before its application."""
    return imported_by(BOOT_ENTRIES + declared_boot_targets())


def start_path_modules() -> set[str]:
    """Every module of the boot, the probe and the build hooks."""
    return imported_by(BOOT_ENTRIES + declared_boot_targets() + PROBE_ENTRIES) | imported_by(
        build_hook_modules()
    )
