"""Lifecycle tests run once per process driver, and wait for their pools themselves.

A module that sets ``EVERY_CONTAINMENT = True`` runs each test once per driver *and* per
containment level (``namespace``, ``cgroup``, ``process``), skipped where the machine
cannot give that level; the other modules run with the default level (``auto``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pools import write_root
from shared_fixtures import DRIVERS

from coretsia.supervisor import containment as levels
from coretsia.worker_protocol.internal.runtime import cgroup
from coretsia.worker_protocol.vocabulary import Containment

LEVELS = ("namespace", "cgroup", "process")
"""The containment levels, strongest first (``auto`` picks the first available)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every lifecycle test with a root runs once per driver (the root's indirect parameter),
    and once per containment level too in a module that asks for it."""
    if "root" not in metafunc.fixturenames:
        return
    if getattr(metafunc.module, "EVERY_CONTAINMENT", False):
        params = [(driver, level) for driver in DRIVERS for level in LEVELS]
        metafunc.parametrize("root", params, indirect=True, ids=[f"{d}-{c}" for d, c in params])
    else:
        metafunc.parametrize(
            "root", [(driver, None) for driver in DRIVERS], indirect=True, ids=DRIVERS
        )


@pytest.fixture
def root(short_root: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A pool root with the driver (and containment level, if any) of its parameter.

    At teardown (after its supervisors stopped) no cgroup of this root may be left.
    """
    driver, level = request.param
    if level is not None and not levels.available(Containment(level)):
        pytest.skip(f"containment {level} is not available here (it needs root, Linux)")
    yield write_root(short_root, driver=driver, containment=level)
    parent = cgroup.base()
    if parent is not None:
        left = cgroup.GenerationCgroup.left_behind(parent, levels.root_id(short_root))
        assert [group.path.name for group in left] == []


@pytest.fixture
def driver(request: pytest.FixtureRequest) -> str:
    """The process driver the test's root is configured with."""
    value: str = request.node.callspec.params["root"][0]
    return value


@pytest.fixture
def containment(request: pytest.FixtureRequest) -> str:
    """The containment level the test's root asks for (``auto`` unless parametrized)."""
    value: str | None = request.node.callspec.params["root"][1]
    return value or "auto"


@pytest.fixture
def leak_grace() -> float:
    """Nothing may still run in a root once its supervisors were stopped: no grace."""
    return 0.0
