"""The protocol package's README (its page on the package index) is true once installed.

Its client example runs, as a user would run it, against a real pool; and no README of a
distribution links to a relative path, which breaks on the index and in an installed
copy (there is no repository beside it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pools import Supervisors, lock_held, wait_gone, write_root

REPO = Path(__file__).resolve().parents[2]
README = REPO / "packages" / "coretsia-worker-protocol" / "README.md"


def _example(tmp_path: Path) -> Path:
    """The README's one Python block, written to a file."""
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    script = tmp_path / "client_example.py"
    script.write_text(block, encoding="utf-8")
    return script


def _run(script: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_client_example_probes_and_stops_a_real_pool(
    root: Path, supervisors: Supervisors, tmp_path: Path
) -> None:
    """What the README says it prints, it prints; the pool is stopped and gone."""
    write_root(root)
    supervisor = supervisors.running(root)
    result = _run(_example(tmp_path), root)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "running 2/2 worker-pool-healthy\nstopped\n"
    assert "`running 2/2 worker-pool-healthy`" in README.read_text(encoding="utf-8")
    assert supervisor.finish() == 0
    assert not lock_held(root)
    assert wait_gone(root) == []


def test_the_client_example_on_a_root_with_no_pool(root: Path, tmp_path: Path) -> None:
    """Not running: its own line and exit 3, as the README's example handles it."""
    write_root(root)
    result = _run(_example(tmp_path), root)
    assert (result.returncode, result.stdout, result.stderr) == (3, "not running\n", "")


@pytest.mark.parametrize(
    "readme", sorted(REPO.glob("packages/*/README.md")), ids=lambda p: p.parent.name
)
def test_no_relative_links_in_a_distributions_readme(readme: Path) -> None:
    """Every link of a page shown on the package index is absolute (or there is none)."""
    targets = re.findall(r"\]\(([^)]+)\)", readme.read_text(encoding="utf-8"))
    assert [t for t in targets if not t.startswith("https://")] == []
