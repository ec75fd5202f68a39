"""Choosing the containment level at ``start``, and what it refuses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pools
import pytest

from coretsia.supervisor.daemon.containment import resolve_containment, root_id
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.internal.runtime import cgroup, pidns, userns
from coretsia.worker_protocol.vocabulary import Containment, ContainmentRequest


def _offer(
    monkeypatch: pytest.MonkeyPatch, *offered: Containment, user_namespace: bool = False
) -> None:
    """Offer these levels (``namespace`` as root does; as any user, with ``user_namespace``)."""
    monkeypatch.setattr(pidns, "available", lambda: Containment.NAMESPACE in offered)
    monkeypatch.setattr(userns, "available", lambda: user_namespace)
    monkeypatch.setattr(cgroup, "available", lambda: Containment.CGROUP in offered)


@pytest.mark.parametrize(
    ("offered", "expected"),
    [
        ((Containment.NAMESPACE, Containment.CGROUP), Containment.NAMESPACE),
        ((Containment.CGROUP,), Containment.CGROUP),
        ((), Containment.PROCESS),
    ],
)
def test_auto_is_the_strongest_level_offered(
    monkeypatch: pytest.MonkeyPatch, offered: tuple[Containment, ...], expected: Containment
) -> None:
    _offer(monkeypatch, *offered)
    assert resolve_containment(ContainmentRequest.AUTO) is expected


@pytest.mark.parametrize("level", [Containment.NAMESPACE, Containment.CGROUP])
def test_an_explicit_level_is_honoured_or_refused_never_downgraded(
    monkeypatch: pytest.MonkeyPatch, level: Containment
) -> None:
    _offer(monkeypatch, level)
    assert resolve_containment(ContainmentRequest(level.value)) is level
    _offer(monkeypatch)
    with pytest.raises(WorkerConfigError) as refused:
        resolve_containment(ContainmentRequest(level.value))
    assert (refused.value.key, refused.value.rule) == ("worker.containment", ConfigRule.UNAVAILABLE)


def test_a_user_namespace_offers_the_namespace_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``CAP_SYS_ADMIN`` (no PID namespace of our own), where user namespaces are
    allowed: ``namespace`` is available, and ``auto`` picks it."""
    _offer(monkeypatch, Containment.CGROUP, user_namespace=True)
    assert resolve_containment(ContainmentRequest.AUTO) is Containment.NAMESPACE
    assert resolve_containment(ContainmentRequest.NAMESPACE) is Containment.NAMESPACE


def test_process_is_always_available(monkeypatch: pytest.MonkeyPatch) -> None:
    _offer(monkeypatch)
    assert resolve_containment(ContainmentRequest.PROCESS) is Containment.PROCESS


def test_the_root_id_is_the_real_path_s(tmp_path: Path) -> None:
    """A hash of the real path: a symlink to the root is the same root, another is not."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert root_id(tmp_path / "link") == root_id(tmp_path / "a") != root_id(tmp_path / "b")
    assert len(root_id(tmp_path / "a")) == 16


WITHOUT_LEVELS = """
import sys
from coretsia.worker_protocol.internal.runtime import cgroup, pidns, userns
for name in sys.argv[1].split(","):
    for module in {"namespace": (pidns, userns), "cgroup": (cgroup,)}[name]:
        setattr(module, "available", lambda: False)
del sys.argv[1]
from coretsia.supervisor.cli import main
main()
"""
"""The real ``coretsia-supervisor`` on a machine without the levels ``argv[1]`` names."""


@pytest.mark.parametrize("level", ["namespace", "cgroup"])
def test_start_refuses_an_unavailable_level(root: Path, level: str) -> None:
    """A configuration error before anything is spawned, never a weaker level."""
    pools.write_root(root, containment=level)
    command = (sys.executable, "-c", WITHOUT_LEVELS, "namespace,cgroup")
    pools.assert_start_refused(root, "worker.containment", "unavailable", command=command)


def test_the_level_in_force_is_logged_and_shown(
    root: Path, monkeypatch: pytest.MonkeyPatch, supervisors: pools.Supervisors
) -> None:
    """``auto`` without namespace or cgroup runs ``process``: in ``pool.starting``, in
    ``status --json``, in the summary line; the state file keeps its ten fields."""
    pools.write_root(root, workers=1)
    monkeypatch.setattr(
        pools, "SUPERVISOR", [sys.executable, "-c", WITHOUT_LEVELS, "namespace,cgroup"]
    )
    supervisor = supervisors.running(root)
    assert "containment process" in supervisor.summary
    assert json.loads(pools.cli(root, "status", "--json").stdout)["containment"] == "process"
    state = json.loads((root / "var/tmp/worker.state.json").read_text())
    assert "containment" not in state
    assert len(state) == 10  # nine fields and the version
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0
    (starting,) = [log for log in supervisor.logs if log["event"] == "pool.starting"]
    assert starting["containment"] == "process"
