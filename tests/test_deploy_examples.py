"""The deployment examples in docs/deploy stay valid and agree with the shutdown budgets."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coretsia.supervisor.config import Budgets

DEPLOY = Path(__file__).resolve().parents[1] / "docs" / "deploy"
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
