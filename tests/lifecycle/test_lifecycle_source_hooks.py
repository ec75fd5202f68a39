"""Task sources and hooks in a real pool: options checked at start, contributed hooks, and
every worker-side token.

The worker-side tokens are reached through ``coretsia-supervisor start`` with the
application's own factories (``task_source = "module:factory"``), installed into the root.
The sources, hooks and the application are modules in ``tests/support/apps/``; the
installed distributions are ``source_sites``'.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pools import (
    Supervisor,
    Supervisors,
    assert_failed,
    assert_start_refused,
    cli,
    install_app,
    wait_for,
    write_root,
)
from site_hooks import pythonpath_first
from source_sites import app_root, frozen_spec, http_root, stop, units


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
        assert spec.hooks.before == (
            "sources_app:configured_before",
            "unit_hooks:before_a",
            "unit_hooks:before_b",
        )
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
