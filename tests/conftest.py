"""Fixtures shared by every test: a process-leak guard; the rest is ``tests/support``.

Also the ``serial`` mark's pass selection: ``bin/test`` runs the suite twice, the tests
without the mark in parallel (pytest-xdist) with ``--serial-tests=skip``, then those with
it one by one with ``--serial-tests=only`` (docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest

# Fresh roots, started supervisors, lock holders: tests/support/shared_fixtures.py.
pytest_plugins = ("shared_fixtures",)

SERIAL_CHOICES = ("run", "skip", "only")
"""``--serial-tests``: run the ``serial`` tests with the rest, leave them out, or run only them."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--serial-tests",
        choices=SERIAL_CHOICES,
        default="run",
        help="the tests marked serial: run them with the rest (default), skip them "
        "(bin/test's parallel pass), or run only them (its serial pass)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Check that every ``serial`` mark says why, then keep the pass's share of the items."""
    for item in items:
        mark = item.get_closest_marker("serial")
        if mark is not None and not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.serial needs a reason=")
    choice = config.getoption("serial_tests")
    if choice == "run":
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        serial = item.get_closest_marker("serial") is not None
        (kept if serial == (choice == "only") else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    """Fail any test that leaves a child process of the test runner alive."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    alive = [p.pid for p in left if _kill_if_alive(p)]
    assert not alive, f"test left processes behind: {alive}"


def _kill_if_alive(proc: psutil.Process) -> bool:
    """Kill a leftover process; True if it was still running (not a zombie)."""
    try:
        running = proc.status() != psutil.STATUS_ZOMBIE
        proc.kill()
    except psutil.NoSuchProcess:
        return False
    return running
