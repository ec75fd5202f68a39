"""Task-source discovery at start, through real entry points of installed distributions.

Each "installed distribution" here is a real ``*.dist-info`` directory with an
``entry_points.txt`` on the supervisor's ``PYTHONPATH``: exactly what importlib.metadata
reads for a distribution pip installed. The source modules depend only on the protocol.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from pools import cli, lock_held, processes_in, wait_gone, write_root

SOURCE_MODULE = """
from coretsia.worker_protocol.task_source import TaskSourceContext

class Task:
    def __init__(self, n):
        self.n = n
    def run(self):
        with open("third-party.log", "a") as log:
            log.write(f"{self.n}\\n")
        return self.n
    def complete(self, result):
        pass
    def fail(self, error):
        pass

class Source:
    def __init__(self, context: TaskSourceContext):
        self.context = context
        self.n = 0
    def assert_ready(self):
        assert self.context.options.get("greeting") == "hello"
    def receive(self):
        if self.n >= 3:
            self.context.wait_for_stop(None)
            return None
        self.n += 1
        return Task(self.n)

def make_source(context):
    return Source(context)
make_source.task_type = "http"
"""


def install(site: Path, dist: str, entries: dict[str, str]) -> None:
    """Lay out one installed distribution contributing task sources."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = ["[coretsia.worker.task_sources]", *(f"{k} = {v}" for k, v in entries.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    (site / f"{dist}.py").write_text(textwrap.dedent(SOURCE_MODULE))


def env_with(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return env


def http_root(root: Path, task_source: str | None = None) -> None:
    """An http pool with no source of its own and the options the test source expects."""
    write_root(root, task_type="http", task_source=task_source)
    with (root / "coretsia.toml").open("a") as config:
        config.write('\n[worker.source_options]\ngreeting = "hello"\n')


class TestDiscovery:
    def test_single_installed_source_is_discovered_and_runs(
        self, root: Path, supervisors, tmp_path: Path
    ) -> None:  # type: ignore[no-untyped-def]
        """With no selection, the one installed source for the task type runs."""
        install(tmp_path / "site", "thirdparty_source", {"third": "thirdparty_source:make_source"})
        http_root(root)
        supervisor = supervisors(root, env=env_with(tmp_path / "site"))
        supervisor.wait_running()
        spec = json.loads(next((root / "var/generations").glob("*/generation.json")).read_text())
        assert spec["spec"]["task_source"] == "thirdparty_source:make_source"
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
        # Two workers ran tasks 1, 2, 3 each, interleaved in any order.
        assert sorted((root / "third-party.log").read_text().split()) == [
            "1",
            "1",
            "2",
            "2",
            "3",
            "3",
        ]

    def test_no_source_for_the_task_type(self, root: Path, supervisors) -> None:  # type: ignore[no-untyped-def]
        """No installed source serves the task type: missing, before anything starts."""
        http_root(root)
        supervisor = supervisors(root)
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_START_FAILED: worker-task-source-missing"
        assert not (root / "var/tmp/worker.lock").exists()

    def test_two_sources_are_ambiguous(self, root: Path, supervisors, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        """Two installed sources for one task type need an explicit selection."""
        site = tmp_path / "site"
        install(site, "first_source", {"first": "first_source:make_source"})
        install(site, "second_source", {"second": "second_source:make_source"})
        http_root(root)
        supervisor = supervisors(root, env=env_with(site))
        assert supervisor.finish() == 1
        assert supervisor.error == ("CORETSIA_WORKER_START_FAILED: worker-task-source-ambiguous")

    def test_selection_by_name(self, root: Path, supervisors, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        """Naming a source selects it among several: configuration, not priority."""
        site = tmp_path / "site"
        install(site, "first_source", {"first": "first_source:make_source"})
        install(site, "second_source", {"second": "second_source:make_source"})
        http_root(root, task_source="second")
        supervisor = supervisors(root, env=env_with(site))
        supervisor.wait_running()
        spec = json.loads(next((root / "var/generations").glob("*/generation.json")).read_text())
        assert spec["spec"]["task_source"] == "second_source:make_source"
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0

    def test_named_source_of_another_task_type(
        self, root: Path, supervisors, tmp_path: Path
    ) -> None:  # type: ignore[no-untyped-def]
        """A selected source that does not serve the task type is missing for it."""
        install(tmp_path / "site", "thirdparty_source", {"third": "thirdparty_source:make_source"})
        write_root(root, task_type="queue", task_source="third")
        supervisor = supervisors(root, env=env_with(tmp_path / "site"))
        assert supervisor.finish() == 1
        assert supervisor.error == "CORETSIA_WORKER_START_FAILED: worker-task-source-missing"
        assert not lock_held(root)
        assert wait_gone(root) == []
        assert processes_in(root) == []

    def test_unimportable_source(self, root: Path, supervisors, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        """An installed entry point that cannot be imported is unresolvable."""
        install(tmp_path / "site", "broken_source", {"broken": "no_such_module:make_source"})
        http_root(root)
        supervisor = supervisors(root, env=env_with(tmp_path / "site"))
        assert supervisor.finish() == 1
        assert supervisor.error == ("CORETSIA_WORKER_START_FAILED: worker-task-source-unresolvable")
