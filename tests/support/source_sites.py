"""The "installed distributions" of the task-source lifecycle tests, and their roots.

Discovery reads what an installer leaves behind, so each fixture distribution is a real
wheel installed by uv into a target directory on the supervisor's ``PYTHONPATH``
(:mod:`fixture_dist`), where both ``start`` and the workers find it. The sources they
contribute are written against ``coretsia-worker-protocol`` alone. Built once per test
session (the ``sites`` fixture of ``tests/lifecycle/conftest.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixture_dist import install, wheel
from pools import Supervisor, app_source, cli, events, install_app, write_root

from coretsia.supervisor.generation.published import load_current_generation
from coretsia.supervisor.generation.spec import GenerationSpec
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR

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


def build_sites(base: Path) -> dict[str, Path]:
    """Target directories under ``base``, each with some fixture distributions installed."""
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


def frozen_spec(root: Path) -> GenerationSpec:
    """The spec of the root's current generation (kept on disk after a stop)."""
    return load_current_generation(root, GENERATIONS_DIR)[1]


def units(root: Path) -> dict[str, list[str]]:
    """What each worker (by pid) logged, in order: ``events.log``'s ``unit`` lines."""
    found: dict[str, list[str]] = {}
    for _, pid, *words in events(root, "unit"):
        found.setdefault(pid, []).append(" ".join(words))
    return found


def stop(root: Path, supervisor: Supervisor) -> None:
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
