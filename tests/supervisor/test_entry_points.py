"""The lean entry-point reader agrees with importlib.metadata (entry_points.py).

Checked on this very environment (every group of every installed distribution) and on
distributions written into a temporary directory put first on ``sys.path``.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

import pytest

from coretsia.supervisor.shared import entry_points as lean


def _groups() -> set[str]:
    dists = importlib.metadata.distributions()
    return {entry.group for dist in dists for entry in dist.entry_points}


class _Entry(Protocol):
    """What both entry point types share: the standard library's and the lean reader's."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...


def _pairs(entries: Iterable[_Entry]) -> list[tuple[str, str]]:
    return sorted((e.name, e.value) for e in entries)


def test_every_group_of_this_environment_reads_the_same() -> None:
    groups = _groups()
    assert "coretsia.worker.task_sources" in groups  # the reference source is installed
    assert "console_scripts" in groups
    for group in groups:
        expected = _pairs(importlib.metadata.entry_points(group=group))
        assert _pairs(lean.entry_points(group)) == expected, group


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        importlib.invalidate_caches()


def _dist(site: Path, directory: str, text: str | None) -> None:
    meta = site / directory
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {directory.split('-')[0]}\n")
    if text is not None:
        (meta / "entry_points.txt").write_text(text)


def test_sections_comments_extras_and_shadowing(site: Path) -> None:
    _dist(
        site,
        "Demo_Pkg-1.0.dist-info",
        "# a comment\n[coretsia.test]\nfirst = json:dumps\n"
        "second=json.decoder:JSONDecoder.decode [extra]\n\n[other]\nthird = os:getcwd\n",
    )
    _dist(site, "nothing-2.0.dist-info", None)  # no entry_points.txt at all
    _dist(site, "legacy.egg-info", "[coretsia.test]\nfourth = os.path:join\n")
    for group in ("coretsia.test", "other"):
        expected = _pairs(importlib.metadata.entry_points(group=group))
        assert _pairs(lean.entry_points(group)) == expected
    loaded = {e.name: e.load() for e in lean.entry_points("coretsia.test")}
    import json
    import os

    assert loaded["first"] is json.dumps
    assert loaded["second"] is json.decoder.JSONDecoder.decode
    assert loaded["fourth"] is os.path.join


def test_the_first_distribution_of_a_name_wins(
    site: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    later = tmp_path_factory.mktemp("later")
    sys.path.append(str(later))
    try:
        _dist(site, "twice-1.0.dist-info", "[coretsia.test]\nname = os:getcwd\n")
        _dist(later, "Twice-2.0.dist-info", "[coretsia.test]\nname = os:getpid\n")
        expected = _pairs(importlib.metadata.entry_points(group="coretsia.test"))
        assert _pairs(lean.entry_points("coretsia.test")) == expected == [("name", "os:getcwd")]
    finally:
        sys.path.remove(str(later))


def test_a_malformed_value_fails_to_load_without_showing_it() -> None:
    entry = lean.EntryPoint("bad", "not a target!", "coretsia.test")
    with pytest.raises(ValueError, match=r"^malformed entry point$"):
        entry.load()
