"""The fixtures every test directory shares: fresh project roots, started
supervisors, lock holders.

Loaded as a pytest plugin by ``tests/conftest.py`` (``tests/support`` is on pytest's
pythonpath). A root lives under ``/tmp`` with a short name, never in pytest's long
``tmp_path``: a pool's control socket (and the SQLite source's notification sockets) live
in it, and an AF_UNIX path longer than about 100 bytes cannot be bound. Every root is
checked at teardown: a process still running in it is killed and fails the test, even if
it was re-parented away from the test runner.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from lock_holder import HoldLock, LockHolder
from pools import Supervisors, assert_none_left, write_root

DRIVERS = ("fork", "proc")
"""The process drivers."""

MODES = (*DRIVERS, "forkserver")
"""The ways a pool makes its workers, which a test runs under when it runs once per mode:
each driver, and the ``fork`` driver's fork server (``spawn = "forkserver"``)."""

per_driver = pytest.mark.parametrize("root", MODES, indirect=True)
"""Run a test taking ``root`` once per mode (:data:`MODES`)."""


def mode_settings(mode: str | None) -> dict[str, Any]:
    """The ``[worker]`` keys of a mode of :data:`MODES` (None: the defaults)."""
    if mode == "forkserver":
        return {"driver": "fork", "spawn": "forkserver"}
    return {"driver": mode}


@pytest.fixture
def leak_grace() -> float:
    """Seconds a root's processes get to end by themselves at teardown before they count
    as left behind. A test directory whose tests wait for their pool themselves may
    override it with 0."""
    return 10.0


@pytest.fixture
def short_roots(leak_grace: float) -> Iterator[Callable[[], Path]]:
    """Make fresh empty roots with a short path; each is checked, then removed, at teardown."""
    made: list[Path] = []
    with ExitStack() as removal:

        def make() -> Path:
            tmp = removal.enter_context(tempfile.TemporaryDirectory(prefix="cw-", dir="/tmp"))
            made.append(Path(tmp).resolve())
            return made[-1]

        yield make
        for path in made:
            assert_none_left(path, leak_grace)


@pytest.fixture
def short_root(short_roots: Callable[[], Path]) -> Path:
    """A fresh empty root with a short path."""
    return short_roots()


@pytest.fixture
def runtime_root(short_root: Path) -> Path:
    """A short root with the runtime directory (``var/tmp``) a pool makes, and nothing else:
    for a test that plays the pool's part itself (a stub supervisor, a guardian alone)."""
    (short_root / "var/tmp").mkdir(parents=True)
    return short_root


@pytest.fixture
def root(short_root: Path, request: pytest.FixtureRequest) -> Path:
    """A pool root (``coretsia.toml`` and the test sources, see :func:`pools.write_root`).

    Its mode is the indirect parameter (:data:`per_driver`), else the defaults.
    """
    return write_root(short_root, **mode_settings(getattr(request, "param", None)))


@pytest.fixture
def supervisors() -> Iterator[Supervisors]:
    """Start ``coretsia-supervisor start`` processes; each is stopped at teardown."""
    started = Supervisors()
    yield started
    started.close()


@pytest.fixture
def hold_lock() -> Iterator[HoldLock]:
    """Hold a lifecycle lock in a separate process until the test ends."""
    started: list[LockHolder] = []

    def hold(path: str) -> LockHolder:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        started.append(LockHolder(path))
        return started[-1]

    yield hold
    for holder in started:
        holder.close()
