"""Seed 000's runtime-entrypoint guard in a real pool: at ``start``, and again in each worker.

``http`` needs ``http.worker``, which nothing of Coretsia provides: a fixture distribution
(``source_sites``) provides it, or not, or only in ``start`` and not in the workers.
"""

from __future__ import annotations

from pathlib import Path

from pools import Supervisors, assert_failed, wait_for, write_root
from site_hooks import pythonpath_first
from source_sites import frozen_spec, http_root, stop

from coretsia.supervisor.generation.spec import RuntimeEntrypoint


class TestRuntimeEntrypoint:
    """Seed 000's guard: ``http`` needs ``http.worker``, which nothing of Coretsia provides."""

    def test_http_without_a_runtime_fails_at_the_guard_before_the_source(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """The Kernel guard's own code and token, naming the entrypoint, exit 1.

        The order is proven by the broken source installed beside a good one: discovery
        would fail with ``worker-task-source-unresolvable``, so the guard ran first; and
        nothing was launched, published or logged.
        """
        http_root(root)
        supervisor = supervisors(
            root, "--log-format", "json", env=pythonpath_first(sites["no_runtime"])
        )
        assert_failed(
            supervisor,
            root,
            "CORETSIA_RUNTIME_ENTRYPOINT_FAILED: runtime-entrypoint-unavailable"
            " (entrypoint http.worker)",
        )
        assert supervisor.logs == []
        assert not (root / "var").exists()

    def test_http_with_a_runtime_resolves_its_source_and_runs(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """With a distribution providing ``http.worker``, the guard passes, the source
        resolves and the pool serves; the generation freezes the provider."""
        http_root(root)
        supervisor = supervisors(root, env=pythonpath_first(sites["third"]))
        supervisor.wait_running()
        spec = frozen_spec(root)
        assert spec.runtime_entrypoint == RuntimeEntrypoint(
            name="http.worker", provider="http_runtime:runtime"
        )
        assert spec.task_source == "thirdparty_source:make_source"
        wait_for(lambda: len((root / "third-party.log").read_text().split()) == 6)
        stop(root, supervisor)

    def test_a_queue_pool_uses_coretsias_own_runtime(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """``bg.worker_queue`` is provided by coretsia-supervisor itself."""
        write_root(root, task_type="queue")
        supervisor = supervisors(root)
        supervisor.wait_running()
        assert frozen_spec(root).runtime_entrypoint == RuntimeEntrypoint(
            name="bg.worker_queue",
            provider="coretsia.supervisor.worker_side.task_worker:serve_tasks",
        )
        stop(root, supervisor)

    def test_a_runtime_gone_at_boot_fails_at_the_workers_guard(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """The workers' own guard (seed 000: again at boot, before readiness) fails the
        pool with the same error, not as a worker failure, and the source never ran."""
        http_root(root)
        env = {**pythonpath_first(sites["third"]), "HTTP_RUNTIME_GONE_IN_WORKERS": "1"}
        assert_failed(
            supervisors(root, env=env),
            root,
            "CORETSIA_RUNTIME_ENTRYPOINT_FAILED: runtime-entrypoint-unavailable"
            " (entrypoint http.worker)",
        )
        assert not (root / "third-party.log").exists()
