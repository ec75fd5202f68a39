"""Lifecycle tests run once per process driver, and wait for their pools themselves."""

from __future__ import annotations

import pytest
from shared_fixtures import DRIVERS


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every lifecycle test with a root runs once per driver (the root's indirect parameter)."""
    if "root" in metafunc.fixturenames:
        metafunc.parametrize("root", DRIVERS, indirect=True)


@pytest.fixture
def driver(request: pytest.FixtureRequest) -> str:
    """The process driver the test's root is configured with."""
    value: str = request.node.callspec.params["root"]
    return value


@pytest.fixture
def leak_grace() -> float:
    """Nothing may still run in a root once its supervisors were stopped: no grace."""
    return 0.0
