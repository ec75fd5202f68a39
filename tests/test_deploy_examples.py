"""The deployment examples in docs/deploy stay valid and agree with the shutdown budgets.

The grace a service manager must give a stop is one rule, documented in
docs/operations.md ("Shutdown budgets") and computed here from the supervisor's own
constants: the page's table and examples, the systemd unit and the Kubernetes manifest
all give the figure it yields.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
from kubernetes_validate.utils import resources_from_file

from coretsia.supervisor.config import Budgets
from coretsia.supervisor.daemon.guardian_events import RELEASE_TIMEOUT_S
from coretsia.supervisor.daemon.guardian_link import EXIT_TIMEOUT_S
from coretsia.supervisor.daemon.supervisor import SHUTDOWN_SLACK_S

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "docs" / "deploy"
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
"""The oldest and newest Kubernetes the check names: 1.37 is the newest schema set that
kubernetes-validate 1.37.0 bundles (it validates offline, from those files)."""
DEFAULT = Budgets()
OPERATIONS = REPO / "docs" / "operations.md"


def worst_stop_s(stop_timeout_ms: int, force_kill_timeout_ms: int) -> int:
    """The longest a supervisor's stop can take, in whole seconds, read from its shutdown
    (``Supervisor._shutdown``): the workers' budget; the wait for the guardian's drain
    past it; then either the lock release and the guardian's exit (a clean drain) or the
    guardian's exit and the sweep of what a lost one left (processes, then cgroup: one
    force-kill budget each); then the last answers going out."""
    force_kill_s = force_kill_timeout_ms / 1000
    budget_s = stop_timeout_ms / 1000 + 2 * force_kill_s
    ending_s = max(RELEASE_TIMEOUT_S + EXIT_TIMEOUT_S, EXIT_TIMEOUT_S + 2 * force_kill_s)
    return math.ceil(budget_s + SHUTDOWN_SLACK_S + ending_s + RELEASE_TIMEOUT_S)


GRACE_S = worst_stop_s(DEFAULT.stop_timeout_ms, DEFAULT.force_kill_timeout_ms)
"""The figure at the default budgets: what the shipped unit and manifest give."""

RULE = (
    f"**the budget plus {SHUTDOWN_SLACK_S + EXIT_TIMEOUT_S + RELEASE_TIMEOUT_S:g} s plus the "
    f"larger of {RELEASE_TIMEOUT_S:g} s and `2 \N{MULTIPLICATION SIGN} force_kill_timeout_ms`**"
)
"""The rule as the page words it, its figures taken from the same constants."""

GRACE_ROW = re.compile(
    r"^\| (\d+)(?: \(default\))? \| (\d+)(?: \(default\))? \| (\d+) s \| (\d+) \|$", re.M
)
"""A row of the page's table: the two budgets (ms), their sum (s) and the grace (s)."""


def _number(text: str, key: str) -> int:
    match = re.search(rf"^\s*{re.escape(key)}\s*[=:]\s*(\d+)", text, re.MULTILINE)
    assert match, key
    return int(match.group(1))


def test_the_documented_rule_is_the_supervisors_worst_stop() -> None:
    """The page's rule, its table and its examples are the worst case computed from the
    supervisor's constants."""
    page = OPERATIONS.read_text()
    text = " ".join(page.split())
    assert RULE in text
    assert f"rounded up to whole seconds: {GRACE_S} s at the defaults" in text
    rows = [tuple(int(cell) for cell in row) for row in GRACE_ROW.findall(page)]
    assert rows[0][:2] == (DEFAULT.stop_timeout_ms, DEFAULT.force_kill_timeout_ms)
    assert len(rows) >= 3
    for stop_ms, force_kill_ms, budget_s, grace_s in rows:
        assert budget_s * 1000 == stop_ms + 2 * force_kill_ms
        assert grace_s == worst_stop_s(stop_ms, force_kill_ms)
    assert f"TimeoutStopSec={GRACE_S}\n" in page
    assert f"`docker stop --time {GRACE_S}`" in text


def test_kubernetes_page_gives_the_same_figure() -> None:
    """docs/deploy/kubernetes.md states the rule's result at the defaults, and at the
    budgets of the example the image runs."""
    text = " ".join((DEPLOY / "kubernetes.md").read_text().split())
    assert f"that is {GRACE_S} s, what the example uses" in text
    example = (REPO / "docs" / "examples" / "quickstart" / "coretsia.toml").read_text()
    budgets = (_number(example, "stop_timeout_ms"), _number(example, "force_kill_timeout_ms"))
    assert f"(`stop_timeout_ms = {budgets[0]}`, `force_kill_timeout_ms = {budgets[1]}`)" in text
    assert f"`docker stop -t {worst_stop_s(*budgets)}`" in text


def test_unit_timeout_is_the_worst_stop() -> None:
    """systemd's TimeoutStopSec leaves the bounded shutdown time to finish."""
    unit = (DEPLOY / "coretsia.service").read_text()
    assert _number(unit, "TimeoutStopSec") == GRACE_S
    assert "KillMode=mixed" in unit
    assert "RestartPreventExitStatus=6" in unit
    assert "Type=notify" in unit


def test_kubernetes_grace_period_is_the_worst_stop() -> None:
    """The pod's grace period leaves the bounded shutdown time to finish."""
    manifest = (DEPLOY / "kubernetes.yaml").read_text()
    assert _number(manifest, "terminationGracePeriodSeconds") == GRACE_S
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
