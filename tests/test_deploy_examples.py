"""The deployment examples in docs/deploy stay valid and agree with the shutdown budgets."""

from __future__ import annotations

import copy
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
from kubernetes_validate.utils import resources_from_file

from coretsia.supervisor.config import Budgets

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "docs" / "deploy"
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
"""The oldest and newest Kubernetes the check names: 1.37 is the newest schema set that
kubernetes-validate 1.37.0 bundles (it validates offline, from those files)."""
DEFAULT = Budgets()
BUDGET_S = (DEFAULT.stop_timeout_ms + 2 * DEFAULT.force_kill_timeout_ms) / 1000


def _number(text: str, key: str) -> int:
    match = re.search(rf"^\s*{re.escape(key)}\s*[=:]\s*(\d+)", text, re.MULTILINE)
    assert match, key
    return int(match.group(1))


def test_unit_timeout_exceeds_the_budgets() -> None:
    """systemd's TimeoutStopSec leaves the bounded shutdown time to finish."""
    unit = (DEPLOY / "coretsia.service").read_text()
    assert _number(unit, "TimeoutStopSec") > BUDGET_S
    assert "KillMode=mixed" in unit
    assert "RestartPreventExitStatus=6" in unit
    assert "Type=notify" in unit


def test_kubernetes_grace_period_exceeds_the_budgets() -> None:
    """The pod's grace period leaves the bounded shutdown time to finish."""
    manifest = (DEPLOY / "kubernetes.yaml").read_text()
    assert _number(manifest, "terminationGracePeriodSeconds") > BUDGET_S
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert probe in manifest


def test_probe_and_entrypoint_commands_exist() -> None:
    """Every coretsia command the examples run is a real subcommand of the CLI."""
    texts = [(DEPLOY / name).read_text() for name in ("kubernetes.yaml", "Dockerfile")]
    used = set(re.findall(r'"coretsia-supervisor", "(\w+)"', "\n".join(texts)))
    assert used == {"start", "status", "health"}
    for command in used:
        result = subprocess.run(
            [sys.executable, "-m", "coretsia.supervisor.cli", command, "--help"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_unit_verifies(tmp_path: Path) -> None:
    """systemd itself accepts the unit (paths pointed at this environment)."""
    unit = (DEPLOY / "coretsia.service").read_text()
    unit = unit.replace(
        "/srv/app/.venv/bin/coretsia-supervisor",
        shutil.which("coretsia-supervisor") or sys.executable,
    )
    unit = unit.replace("WorkingDirectory=/srv/app", f"WorkingDirectory={tmp_path}")
    unit = re.sub(r"^(User|Group)=.*$", r"\1=root", unit, flags=re.MULTILINE)
    path = tmp_path / "coretsia-example.service"
    path.write_text(unit)
    result = subprocess.run(
        ["systemd-analyze", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_kubernetes_manifest_validates_offline(version: str) -> None:
    """kubernetes.yaml is a valid Deployment, strictly (no unknown field), offline."""
    (deployment,) = resources_from_file(str(DEPLOY / "kubernetes.yaml"))
    assert kubernetes_validate.validate(deployment, version, strict=True) == version[:4]


def test_kubernetes_validation_refuses_an_unknown_field() -> None:
    """The strict check is live: a misspelled field of the same manifest is refused."""
    (deployment,) = resources_from_file(str(DEPLOY / "kubernetes.yaml"))
    broken = copy.deepcopy(deployment)
    spec = broken["spec"]["template"]["spec"]
    spec["terminationGracePeriod"] = spec.pop("terminationGracePeriodSeconds")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def test_docs_show_the_commands_the_container_check_runs() -> None:
    """Every command `nox -s container` runs is in the docs as the reader would type it."""
    path = REPO / "bench" / "container_check" / "commands.py"
    spec = importlib.util.spec_from_file_location("container_commands", path)
    assert spec is not None
    assert spec.loader is not None
    commands = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(commands)
    docs = (DEPLOY / "kubernetes.md").read_text() + (DEPLOY / "Dockerfile").read_text()
    missing = [
        line
        for template in commands.DOCUMENTED
        if (line := " ".join(commands.render(template, commands.DOCS_NAMES))) not in docs
    ]
    assert missing == []
