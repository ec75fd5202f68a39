"""Task-source discovery in a real pool: installed distributions found (or not) at start.

Each "installed distribution" is a real wheel installed by uv (``source_sites``): the one
source for the task type runs, none is missing, two are ambiguous until one is named, a
broken one fails discovery unless the configuration names another.
"""

from __future__ import annotations

from pathlib import Path

from fixture_dist import coretsia_imports
from pools import Supervisors, assert_failed, wait_for, write_root
from site_hooks import pythonpath_first
from source_sites import frozen_spec, http_root, stop


class TestDiscovery:
    def test_installed_source_is_discovered_and_runs(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """With no selection, the one installed source for the task type runs."""
        site = sites["third"]
        assert (site / "thirdparty_source-1.0.dist-info/INSTALLER").read_text().strip() == "uv"
        imported = coretsia_imports(site, "thirdparty_source")
        assert "coretsia.worker_protocol.task_source" in imported  # the SPI, and only it
        assert [m for m in imported if not m.startswith("coretsia.worker_protocol")] == ["coretsia"]
        http_root(root)
        supervisor = supervisors(root, env=pythonpath_first(site))
        supervisor.wait_running()
        assert frozen_spec(root).task_source == "thirdparty_source:make_source"
        wait_for(lambda: len((root / "third-party.log").read_text().split()) == 6)
        stop(root, supervisor)
        # Two workers ran tasks 1, 2, 3 each, interleaved in any order.
        assert sorted((root / "third-party.log").read_text().split()) == sorted("112233")

    def test_no_source_for_the_task_type(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """No installed source serves the task type: missing, before anything starts."""
        http_root(root)
        supervisor = supervisors(root, env=pythonpath_first(sites["runtime"]))
        assert_failed(supervisor, root, "CORETSIA_WORKER_START_FAILED: worker-task-source-missing")
        assert not (root / "var/tmp/worker.lock").exists()

    def test_two_sources_are_ambiguous(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """Two installed sources for one task type need an explicit selection."""
        http_root(root)
        supervisor = supervisors(root, env=pythonpath_first(sites["two"]))
        assert_failed(
            supervisor, root, "CORETSIA_WORKER_START_FAILED: worker-task-source-ambiguous"
        )

    def test_selection_by_name(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """Naming a source selects it among several: configuration, not priority."""
        http_root(root, task_source="second")
        supervisor = supervisors(root, env=pythonpath_first(sites["two"]))
        supervisor.wait_running()
        assert frozen_spec(root).task_source == "second_source:make_source"
        stop(root, supervisor)

    def test_named_source_of_another_task_type(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """A selected source that does not serve the task type is missing for it."""
        write_root(root, task_type="queue", task_source="third")
        supervisor = supervisors(root, env=pythonpath_first(sites["third"]))
        assert_failed(supervisor, root, "CORETSIA_WORKER_START_FAILED: worker-task-source-missing")

    def test_a_broken_distribution_fails_discovery(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """An installed source entry that cannot be imported fails every unnamed discovery.

        Strict on purpose: the broken entry might be the very source meant to serve.
        """
        http_root(root)
        supervisor = supervisors(root, env=pythonpath_first(sites["broken"]))
        assert_failed(
            supervisor, root, "CORETSIA_WORKER_START_FAILED: worker-task-source-unresolvable"
        )

    def test_naming_the_source_imports_only_that_entry(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """The workaround for a broken neighbour: select the source by name."""
        http_root(root, task_source="third")
        supervisor = supervisors(root, env=pythonpath_first(sites["broken"]))
        supervisor.wait_running()
        assert frozen_spec(root).task_source == "thirdparty_source:make_source"
        stop(root, supervisor)
