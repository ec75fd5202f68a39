"""Task sources and hooks in a real pool: discovery at start, and every worker-side token.

Discovery reads what an installer leaves behind, so each "installed distribution" here
is a real wheel installed by uv into a target directory on the supervisor's
``PYTHONPATH`` (:mod:`fixture_dist`), where both ``start`` and the workers find it. The
sources they contribute are written against ``coretsia-worker-protocol`` alone (checked).

The worker-side tokens are reached through ``coretsia-supervisor start`` with the
application's own factories (``task_source = "module:factory"``), installed into the root.
The sources, hooks and the application are modules in ``tests/support/apps/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixture_dist import coretsia_imports, install, wheel
from pools import (
    Supervisor,
    Supervisors,
    app_source,
    assert_failed,
    assert_start_refused,
    cli,
    events,
    install_app,
    wait_for,
    write_root,
)
from site_hooks import pythonpath_first

SOURCE_GROUP = "coretsia.worker.task_sources"
HOOK_GROUP = "coretsia.worker.hooks"
RUNTIME_GROUP = "coretsia.worker.runtime_entrypoints"

HTTP_RUNTIME = """
import os

if os.environ.get("HTTP_RUNTIME_GONE_IN_WORKERS") and "CORETSIA_WORKER_TREE" in os.environ:
    raise ImportError("this runtime went away")  # as if uninstalled once the pool started
runtime = "http"
"""
"""An HTTP runtime distribution's module: provides ``http.worker`` by its entry point.

With ``HTTP_RUNTIME_GONE_IN_WORKERS`` set it imports in ``start`` but not in the
generation's processes (they carry ``CORETSIA_WORKER_TREE``): the boot's guard then
finds it gone, as if it had been uninstalled after ``start``."""


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Target directories, each with some fixture distributions installed by uv."""
    base = tmp_path_factory.mktemp("dists")
    source, hooks = app_source("third_party_source.py"), app_source("contributed_hooks.py")
    wheels = {
        "runtime": wheel(
            base / "wheels",
            "http_runtime",
            {"http_runtime": HTTP_RUNTIME},
            {RUNTIME_GROUP: {"http.worker": "http_runtime:runtime"}},
        ),
        "third": wheel(
            base / "wheels",
            "thirdparty_source",
            {"thirdparty_source": source},
            {SOURCE_GROUP: {"third": "thirdparty_source:make_source"}},
        ),
        "first": wheel(
            base / "wheels",
            "first_source",
            {"first_source": source},
            {SOURCE_GROUP: {"first": "first_source:make_source"}},
        ),
        "second": wheel(
            base / "wheels",
            "second_source",
            {"second_source": source},
            {SOURCE_GROUP: {"second": "second_source:make_source"}},
        ),
        "broken": wheel(
            base / "wheels",
            "broken_source",
            {},
            {SOURCE_GROUP: {"broken": "no_such_module:make_source"}},
        ),
        "broken_check": wheel(
            base / "wheels",
            "broken_check_source",
            {"broken_check_source": source},
            {SOURCE_GROUP: {"checked": "broken_check_source:make_checked_source"}},
        ),
        # Entries listed out of name order: contributed hooks run by entry-point name.
        "hooks": wheel(
            base / "wheels",
            "unit_hooks",
            {"unit_hooks": hooks},
            {
                HOOK_GROUP: {
                    "b_before": "unit_hooks:before_b",
                    "a_before": "unit_hooks:before_a",
                    "reset": "unit_hooks:reset",
                    "after": "unit_hooks:after",
                }
            },
        ),
        "bad_kind": wheel(
            base / "wheels",
            "bad_kind_hooks",
            {"bad_kind_hooks": hooks},
            {HOOK_GROUP: {"during": "bad_kind_hooks:during"}},
        ),
        "bad_import": wheel(
            base / "wheels",
            "bad_import_hooks",
            {},
            {HOOK_GROUP: {"gone": "no_such_module:hook"}},
        ),
        "not_callable": wheel(
            base / "wheels",
            "not_callable_hooks",
            {"not_callable_hooks": hooks},
            {HOOK_GROUP: {"inert": "not_callable_hooks:inert"}},
        ),
    }
    layouts = {
        "third": ["third", "runtime"],
        "no_runtime": ["broken", "third"],
        "runtime": ["runtime"],
        "two": ["first", "second", "runtime"],
        "broken": ["broken", "third", "runtime"],
        "broken_check": ["broken_check", "runtime"],
        "hooks": ["hooks"],
        "bad_kind": ["bad_kind"],
        "bad_import": ["bad_import"],
        "not_callable": ["not_callable"],
    }
    found = {}
    for site, names in layouts.items():
        for name in names:
            install(wheels[name], base / site)
        found[site] = base / site
    return found


def http_root(root: Path, task_source: str | None = None) -> None:
    """An http pool with no source of its own and the options the fixture source expects."""
    write_root(
        root, task_type="http", task_source=task_source, source_options={"greeting": "hello"}
    )


def app_root(root: Path, **worker: Any) -> None:
    """A pool running one of the application's own factories (``sources_app``)."""
    write_root(root, **worker)
    install_app(root, "sources_app.py")


def frozen_spec(root: Path) -> dict[str, object]:
    generation = next((root / "var/generations").glob("*/generation.json"))
    spec: dict[str, object] = json.loads(generation.read_text())["spec"]
    return spec


def units(root: Path) -> dict[str, list[str]]:
    """What each worker (by pid) logged, in order: ``events.log``'s ``unit`` lines."""
    found: dict[str, list[str]] = {}
    for _, pid, *words in events(root, "unit"):
        found.setdefault(pid, []).append(" ".join(words))
    return found


def stop(root: Path, supervisor: Supervisor) -> None:
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0


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
        assert frozen_spec(root)["task_source"] == "thirdparty_source:make_source"
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
        assert spec["runtime_entrypoint"] == {
            "name": "http.worker",
            "provider": "http_runtime:runtime",
        }
        assert spec["task_source"] == "thirdparty_source:make_source"
        wait_for(lambda: len((root / "third-party.log").read_text().split()) == 6)
        stop(root, supervisor)

    def test_a_queue_pool_uses_coretsias_own_runtime(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """``bg.worker_queue`` is provided by coretsia-supervisor itself."""
        write_root(root, task_type="queue")
        supervisor = supervisors(root)
        supervisor.wait_running()
        assert frozen_spec(root)["runtime_entrypoint"] == {
            "name": "bg.worker_queue",
            "provider": "coretsia.supervisor.worker.tasks:serve_tasks",
        }
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
        assert frozen_spec(root)["task_source"] == "second_source:make_source"
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
        assert frozen_spec(root)["task_source"] == "thirdparty_source:make_source"
        stop(root, supervisor)


def sqlite_root(root: Path, options: dict[str, object]) -> None:
    """A queue pool of the installed sqlite source with these ``source_options``."""
    write_root(root, task_type="queue", task_source="sqlite", source_options=options or None)
    install_app(root, "sqlite_pool_app.py")


HANDLER = "sqlite_pool_app:handle"


class TestOptionsCheckedAtStart:
    """An installed source's ``check_options`` runs at start, before anything is spawned."""

    @pytest.mark.parametrize(
        ("options", "key", "rule"),
        [
            ({}, "handler", "required"),
            ({"handler": HANDLER, "max_attempts": "3"}, "max_attempts", "wrong-type"),
            ({"handler": HANDLER, "surprise": 1}, "surprise", "unknown-key"),
            ({"handler": "sqlite_pool_app"}, "handler", "invalid-target"),
        ],
        ids=["no-handler", "wrong-type", "unknown-key", "not-a-target"],
    )
    def test_a_broken_sqlite_option_is_a_config_error(
        self, root: Path, options: dict[str, object], key: str, rule: str
    ) -> None:
        """Exit 6 naming ``worker.source_options.<key>``; no log line, so no worker spawned."""
        sqlite_root(root, options)
        assert_start_refused(
            root, f"worker.source_options.{key}", rule, options=("--log-format", "json")
        )
        assert not (root / "var/tmp/worker.lock").exists()

    def test_the_handler_is_imported_by_the_workers(
        self, root: Path, supervisors: Callable[..., Supervisor]
    ) -> None:
        """Whether the handler imports is not checked at start: the workers say it, unchanged."""
        sqlite_root(root, {"handler": "no_such_app_module:handle"})
        assert_failed(
            supervisors(root), root, "CORETSIA_WORKER_START_FAILED: worker-task-source-unresolvable"
        )

    def test_a_check_that_breaks_fails_the_start(
        self, root: Path, supervisors: Callable[..., Supervisor], sites: dict[str, Path]
    ) -> None:
        """Not an option error: the source is broken, unresolvable, before any spawn."""
        http_root(root)
        supervisor = supervisors(
            root, "--log-format", "json", env=pythonpath_first(sites["broken_check"])
        )
        assert_failed(
            supervisor, root, "CORETSIA_WORKER_START_FAILED: worker-task-source-unresolvable"
        )
        assert supervisor.logs == []  # nothing was started, so nothing was logged
        assert not (root / "var/generations").exists()


class TestHooks:
    def test_contributed_hooks_run_after_the_configured_ones_by_name(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path]
    ) -> None:
        """Each unit of work: configured hooks first, then contributed ones by entry name."""
        hooks = {
            "before": ["sources_app:configured_before"],
            "after": ["sources_app:configured_after"],
            "reset": ["sources_app:configured_reset"],
        }
        app_root(root, task_source="sources_app:counted", tables={"worker.hooks": hooks})
        supervisor = supervisors(root, env=pythonpath_first(sites["hooks"]))
        supervisor.wait_running()
        spec = frozen_spec(root)
        assert spec["before_hooks"] == [
            "sources_app:configured_before",
            "unit_hooks:before_a",
            "unit_hooks:before_b",
        ]
        unit = [
            "configured-before",
            "contributed-before-a",
            "contributed-before-b",
            "task",
            "configured-after",
            "contributed-after",
            "configured-reset",
            "contributed-reset",
            "complete",
        ]
        wait_for(lambda: sum(map(len, units(root).values())) == 2 * 2 * len(unit))
        stop(root, supervisor)
        assert list(units(root).values()) == [unit * 2, unit * 2]

    @pytest.mark.parametrize("site", ["bad_kind", "bad_import", "not_callable"])
    def test_a_bad_contributed_hook_fails_the_start(
        self, root: Path, supervisors: Supervisors, sites: dict[str, Path], site: str
    ) -> None:
        """A hook entry of no known kind, that cannot be imported or that is not callable
        fails the start (start's catch-all: the seed has no token for hooks)."""
        app_root(root, task_source="sources_app:counted")
        supervisor = supervisors(root, env=pythonpath_first(sites[site]))
        assert_failed(supervisor, root, "CORETSIA_WORKER_START_FAILED: worker-start-failed")
        # Refused in discovery, before the generation: not by a failure further on that
        # start's catch-all would name alike (an accepted bad hook fails in the workers).
        assert not (root / "var/generations").exists()
        assert units(root) == {}

    def test_a_failing_before_hook_skips_the_task_and_fails_it(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """The task never runs, ``fail`` gets the hook's error, and the worker goes on."""
        hooks = {"before": ["sources_app:failing_before"]}
        app_root(root, task_source="sources_app:counted", tables={"worker.hooks": hooks})
        supervisor = supervisors(root)
        supervisor.wait_running()
        wait_for(lambda: sum(map(len, units(root).values())) == 2 * 2 * 2)
        assert json.loads(cli(root, "status", "--json").stdout)["pool_status"] == "running"
        stop(root, supervisor)
        unit = ["failing-before", "fail RuntimeError"]
        assert list(units(root).values()) == [unit * 2, unit * 2]


class TestWorkerTokens:
    @pytest.mark.parametrize(
        ("factory", "token", "logged"),
        [
            ("shapeless", "START_FAILED: worker-task-source-invalid", set()),
            ("other_type", "START_FAILED: worker-task-source-invalid", set()),
            ("exploding", "START_FAILED: worker-task-source-unresolvable", set()),
            ("ending", "LIFECYCLE_FAILED: worker-task-source-terminated", set()),
            # A failing complete() never falls through to fail().
            (
                "complete_fails",
                "LIFECYCLE_FAILED: worker-task-settlement-failed",
                {"task", "complete"},
            ),
            (
                "fail_fails",
                "LIFECYCLE_FAILED: worker-task-settlement-failed",
                {"task", "fail ValueError"},
            ),
        ],
    )
    def test_each_token_through_a_running_pool(
        self, root: Path, supervisors: Supervisors, factory: str, token: str, logged: set[str]
    ) -> None:
        """The pool fails with the worker's token (exit 1, stderr), and nothing is left."""
        app_root(root, task_source=f"sources_app:{factory}")
        assert_failed(supervisors(root), root, f"CORETSIA_WORKER_{token}")
        assert {word for words in units(root).values() for word in words} == logged

    def test_recycled_worker_that_is_never_ready(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A fresh boot after max_requests gets start_timeout_ms, then fails the pool."""
        app_root(
            root,
            task_source="sources_app:second_boot_hangs",
            workers=1,
            max_requests=1,
            start_timeout_ms=3000,
        )
        supervisor = supervisors(root)
        supervisor.wait_running()
        assert_failed(supervisor, root, "CORETSIA_WORKER_START_FAILED: worker-readiness-timeout")
        assert (root / "booted-0").exists()
