"""Lifecycle tests run once per mode (each process driver, and the fork server), and wait
for their pools themselves.

A module that sets ``EVERY_CONTAINMENT = True`` runs each test once per mode *and* per
containment level (``namespace``, ``cgroup``, ``process``), skipped where the machine
cannot give that level; the other modules run with the default level (``auto``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pools import write_root
from shared_fixtures import MODES, mode_settings
from source_sites import build_sites

from coretsia.supervisor.daemon import containment as levels
from coretsia.worker_protocol.internal.runtime import cgroup
from coretsia.worker_protocol.vocabulary import Containment

LEVELS = ("namespace", "cgroup", "process")
"""The containment levels, strongest first (``auto`` picks the first available)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every lifecycle test with a root runs once per mode (the root's indirect parameter),
    and once per containment level too in a module that asks for it."""
    if "root" not in metafunc.fixturenames:
        return
    if getattr(metafunc.module, "EVERY_CONTAINMENT", False):
        params = [(mode, level) for mode in MODES for level in LEVELS]
        metafunc.parametrize("root", params, indirect=True, ids=[f"{d}-{c}" for d, c in params])
    else:
        metafunc.parametrize("root", [(mode, None) for mode in MODES], indirect=True, ids=MODES)


@pytest.fixture
def root(short_root: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A pool root with the mode (and containment level, if any) of its parameter.

    At teardown (after its supervisors stopped) no cgroup of this root may be left.
    """
    mode, level = request.param
    if level is not None and not levels.available(Containment(level)):
        pytest.skip(f"containment {level} is not available here (it needs root, Linux)")
    yield write_root(short_root, **mode_settings(mode), containment=level)
    parent = cgroup.base()
    if parent is not None:
        left = cgroup.GenerationCgroup.left_behind(parent, levels.root_id(short_root))
        assert [group.path.name for group in left] == []


@pytest.fixture
def driver(request: pytest.FixtureRequest) -> str:
    """The process driver the test's root is configured with (``fork`` for the fork server)."""
    value = mode_settings(request.node.callspec.params["root"][0])["driver"]
    assert value is not None
    return value


@pytest.fixture
def spawn(request: pytest.FixtureRequest) -> str:
    """How the test's root makes its workers: ``exec``, or ``forkserver``."""
    return "forkserver" if request.node.callspec.params["root"][0] == "forkserver" else "exec"


@pytest.fixture
def containment(request: pytest.FixtureRequest) -> str:
    """The containment level the test's root asks for (``auto`` unless parametrized)."""
    value: str | None = request.node.callspec.params["root"][1]
    return value or "auto"


@pytest.fixture
def leak_grace() -> float:
    """Nothing may still run in a root once its supervisors were stopped: no grace."""
    return 0.0


@pytest.fixture(scope="session")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Target directories, each with some fixture distributions installed by uv (built
    once: the source, runtime-guard and hook modules all read them)."""
    return build_sites(tmp_path_factory.mktemp("dists"))
