"""What a worker's boot costs and shows: the boot path imports nothing heavy, and the quick
start example boots from its own configuration and serves a task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from launcher_harness import QUEUE_RUNTIME, WAIT, Launcher, launch_spec, read_line
from start_paths import boot_modules

from coretsia.supervisor.generation.published import publish
from coretsia.worker_protocol.worker_channel import Ready

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = REPO / "docs" / "examples" / "quickstart"


HEAVY = ("trio", "cattrs", "attrs", "psutil")


# --- boot cost and the quick start -----------------------------------------------------


def test_boot_path_imports_nothing_heavy(root: Path) -> None:
    publish(root, launch_spec())
    with Launcher(root, python_flags=("-X", "importtime")) as launcher:
        assert launcher.next_frame() == Ready()
        launcher.stop()
        outcome = launcher.finish()
    assert outcome.code == 0
    lines = [ln for ln in outcome.stderr.decode().splitlines() if ln.startswith("import time:")]
    modules = {ln.rsplit("|", 1)[1].strip() for ln in lines[1:]}  # first line is the header
    assert "coretsia.supervisor.generation.published" in modules
    assert "coretsia.supervisor.generation.spec" in modules
    assert "coretsia.worker_protocol.worker_channel" in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == []
    # Slow standard modules too: dataclasses with inspect. And discovery: a worker imports
    # the one frozen target, it never reads package metadata or entry points (seed 000).
    # (What the boot costs is the benchmark's: docs/performance.md.)
    banned = {"dataclasses", "inspect"}
    banned |= {
        "importlib.metadata",
        "coretsia.supervisor.shared.entry_points",
        "coretsia.supervisor.daemon.task_sources",
        "coretsia.supervisor.daemon.generation_builder",
        "coretsia.supervisor.config",
    }
    assert modules & banned == set()
    # The boot set that tests/test_record_style.py allows plain records in covers this boot.
    ours = {m for m in modules if m.startswith("coretsia.")}
    assert ours - boot_modules() == set()


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    """A copy of docs/examples/quickstart, so the test never writes into the repository."""
    project = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, project, ignore=shutil.ignore_patterns("var", "__pycache__"))
    return project


def test_quickstart_example_boots_and_works(quickstart: Path) -> None:
    from coretsia.sources.sqlite_queue import SqliteQueue
    from coretsia.supervisor.config import load_config
    from coretsia.supervisor.daemon.generation_builder import build_generation_spec
    from coretsia.supervisor.worker_side.runtime_guard import resolve_runtime_entrypoint

    runtime = resolve_runtime_entrypoint("queue")
    assert runtime == QUEUE_RUNTIME  # what coretsia-supervisor's own entry point provides
    publish(quickstart, build_generation_spec(quickstart, load_config(quickstart), runtime))
    with SqliteQueue(str(quickstart / "var/queue.sqlite3")) as queue:
        queue.enqueue(["hello"])
    with Launcher(quickstart, slot=0) as launcher:
        assert launcher.next_frame() == Ready()
        line = read_line(launcher.proc.stdout, WAIT)
        launcher.stop()
        outcome = launcher.finish()
    assert line.endswith(b": 'hello' has 5 letters\n")
    assert (outcome.code, outcome.frames) == (0, [Ready()])
