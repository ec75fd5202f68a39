"""The distributions agree on one version and install as separate wheels.

The repo has one version (``VERSION``), written into each distribution's ``_version.py``
and into the exact pins between siblings (``bin/set-version`` rewrites all of them). A
missed spot would publish wheels that install a mismatched sibling, so this guards it, and
it builds the real wheels to check what a user gets: no ``coretsia/__init__.py`` (one would
break the shared ``coretsia`` namespace for every other distribution) and ``==`` pins in
``Requires-Dist`` (uv's workspace sources never reach wheel metadata).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

ROOT = Path(__file__).resolve().parent.parent
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
MEMBERS = {p.parent.name: p.parent for p in sorted(ROOT.glob("packages/*/pyproject.toml"))}


def _pyproject(member: str) -> dict[str, Any]:
    with (MEMBERS[member] / "pyproject.toml").open("rb") as f:
        data: dict[str, Any] = tomllib.load(f)
    return data


def _sub_package(member: str) -> str:
    """coretsia-worker-protocol -> worker_protocol."""
    return member.removeprefix("coretsia-").replace("-", "_")


def _version_file_value(path: Path) -> str:
    """``__version__`` assigned in ``path``, read without importing it."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise AssertionError(f"no __version__ = '...' in {path}")


def test_the_five_distributions_are_present() -> None:
    """The tests below iterate over MEMBERS: make sure it is not silently empty."""
    assert set(MEMBERS) == {
        "coretsia-worker-protocol",
        "coretsia-supervisor",
        "coretsia-guardian",
        "coretsia-proc-host",
        "coretsia-sources",
    }


def test_version_file_is_a_plain_version() -> None:
    """VERSION is one line X.Y.Z (optionally a PEP 440 pre/dev suffix)."""
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", VERSION)


@pytest.mark.parametrize("member", sorted(MEMBERS))
def test_distribution_version_is_VERSION(member: str) -> None:
    """Each distribution's version (from its one _version.py, via hatch) equals VERSION.

    The file sits in the distribution's package or, where other sub-packages import it
    (the supervisor's), in the sub-package at the bottom of its layers.
    """
    project = _pyproject(member)
    sub = _sub_package(member)
    (version_file,) = (MEMBERS[member] / "src" / "coretsia" / sub).rglob("_version.py")
    assert project["project"]["name"] == member
    assert project["project"].get("dynamic") == ["version"]
    path = project["tool"]["hatch"]["version"]["path"]
    assert MEMBERS[member] / path == version_file
    assert _version_file_value(version_file) == VERSION


@pytest.mark.parametrize("member", sorted(MEMBERS))
def test_siblings_are_pinned_exactly(member: str) -> None:
    """A dependency on another member is ``==VERSION`` and sourced from the workspace."""
    project = _pyproject(member)
    sources = project.get("tool", {}).get("uv", {}).get("sources", {})
    for dependency in project["project"].get("dependencies", []):
        requirement = Requirement(dependency)
        if requirement.name in MEMBERS:
            assert str(requirement.specifier) == f"=={VERSION}", dependency
            assert sources.get(requirement.name) == {"workspace": True}, requirement.name


def _release_tag() -> str | None:
    """CORETSIA_TAG, else the tag exactly at HEAD; None when there is none."""
    tag = os.environ.get("CORETSIA_TAG")
    if tag is None and shutil.which("git"):
        described = subprocess.run(
            ["git", "describe", "--exact-match", "--tags", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        tag = described.stdout.strip() if described.returncode == 0 else None
    return tag or None


def test_release_tag_matches_VERSION() -> None:
    """A release tag vX.Y.Z on HEAD (or CORETSIA_TAG in CI) must name VERSION."""
    tag = _release_tag()
    if tag is None or not re.fullmatch(r"v\d+\.\d+\.\d+\S*", tag):
        pytest.skip("HEAD carries no vX.Y.Z tag")
    assert tag == f"v{VERSION}"


def _build_wheels(out: Path) -> list[Path]:
    """Build every member's wheel into ``out`` with uv (from the env) or ``python -m build``."""
    try:
        from uv import find_uv_bin

        command = [find_uv_bin(), "build", "--all-packages", "--wheel", "--quiet"]
        command += ["--python", sys.executable, "--out-dir", str(out)]
    except ImportError:  # no uv in this environment: the PyPA front end (dev group) works too
        command = [sys.executable, "-m", "build", "--wheel", "--outdir", str(out)]
        for member_dir in MEMBERS.values():
            subprocess.run([*command, str(member_dir)], check=True, cwd=ROOT)
        return sorted(out.glob("*.whl"))
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run(command, check=True, cwd=ROOT, env=env)
    return sorted(out.glob("*.whl"))


@pytest.mark.slow
def test_built_wheels(tmp_path: Path) -> None:
    """Each wheel ships only coretsia/<sub>/ and pins its siblings with ``==VERSION``."""
    wheels = _build_wheels(tmp_path)
    by_name = {w.name.split("-")[0].replace("_", "-"): w for w in wheels}
    assert set(by_name) == set(MEMBERS)
    for member, wheel in by_name.items():
        assert wheel.name.split("-")[1] == VERSION
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
            metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
            metadata = HeaderParser().parsestr(zf.read(metadata_name).decode("utf-8"))
        assert "coretsia/__init__.py" not in names, wheel.name
        own = f"coretsia/{_sub_package(member)}/"
        stray = [n for n in names if not n.startswith(own) and ".dist-info/" not in n]
        assert not [n for n in stray if ".data/" not in n], (wheel.name, stray)
        assert metadata["Version"] == VERSION
        if member == "coretsia-supervisor":  # the man page, built from the real parser
            page = f"coretsia_supervisor-{VERSION}.data/data/share/man/man1/coretsia-supervisor.1"
            assert page in names, names
        if member == "coretsia-sources":  # the queue commands' pages, from their parsers
            pages = f"coretsia_sources-{VERSION}.data/data/share/man/man1/"
            assert f"{pages}coretsia-queue.1" in names, names
            assert f"{pages}coretsia-sqlite-queue.1" in names, names
        for line in metadata.get_all("Requires-Dist") or []:
            requirement = Requirement(line)
            if requirement.name in MEMBERS:
                assert str(requirement.specifier) == f"=={VERSION}", (wheel.name, line)


LINUX_ONLY = ["Operating System :: POSIX :: Linux"]
"""What every distribution claims: Linux, the one platform every test runs on."""

PLATFORM_ROWS = (
    "| Linux | supported and tested |",
    "| macOS, other POSIX systems | runs, untested |",
    "| Windows | not supported |",
)
"""The start of each row of the platform table in the README and in reliability.md."""


@pytest.mark.parametrize("member", sorted(MEMBERS))
def test_classifiers_claim_linux_only(member: str) -> None:
    """No wheel claims macOS or Windows, where no test has run (see reliability.md)."""
    classifiers = _pyproject(member)["project"]["classifiers"]
    assert [c for c in classifiers if c.startswith("Operating System ::")] == LINUX_ONLY


@pytest.mark.parametrize("page", ["README.md", "docs/reliability.md"])
def test_the_docs_say_what_the_classifiers_say(page: str) -> None:
    """The README and reliability.md carry the same platform table, and name the claim."""
    text = (ROOT / page).read_text(encoding="utf-8")
    assert all(row in text for row in PLATFORM_ROWS)
    assert f"`{LINUX_ONLY[0]}`" in text
