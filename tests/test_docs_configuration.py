"""docs/configuration.md stays true to the configuration's code: its tables and ranges."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coretsia.supervisor.config import parse_config
from coretsia.supervisor.config.converter import _ROUTES
from coretsia.worker_protocol.catalogue import EXIT_CODES, REASON_CODES, Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.vocabulary import MAX_WORKERS

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
TEXT = DOC.read_text(encoding="utf-8")
INTRO = TEXT.split("\n## ", 1)[0]

SUBTABLES = sorted(key for key, (_, field) in _ROUTES.items() if field is None)
"""Every ``[worker.*]`` subtable the loader accepts (a whole record each)."""


@pytest.mark.parametrize("table", SUBTABLES)
def test_the_introduction_names_every_subtable(table: str) -> None:
    """The first paragraph lists each subtable the loader accepts, by its TOML header."""
    assert f"`[{table}]`" in INTRO


def test_the_introduction_names_process_tables() -> None:
    """``[[process]]`` lives at the top level, beside ``[worker]``: named too."""
    assert "process" in _ROUTES
    assert "`[[process]]`" in INTRO


def test_the_introduction_counts_its_subtables() -> None:
    """ "its four subtables": the count in words matches the loader's."""
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    assert f"its {words[len(SUBTABLES)]} subtables" in " ".join(INTRO.split())


def test_workers_range_is_said_alike_everywhere_and_is_the_codes() -> None:
    """The example's comment and the key table give the range the code enforces."""
    comment = re.search(r"^workers = \d+ +# .*?(\d+)\.\.(\d+)", TEXT, re.MULTILINE)
    row = re.search(r"^\| `worker\.workers` \| integer \| `\d+` \| (\d+) ≤ n ≤ (\d+)", TEXT, re.M)
    assert comment is not None
    assert row is not None
    assert comment.groups() == row.groups() == ("0", str(MAX_WORKERS))
    assert parse_config({"workers": 0}).worker.workers == 0
    assert parse_config({"workers": MAX_WORKERS}).worker.workers == MAX_WORKERS
    for outside in (-1, MAX_WORKERS + 1):
        with pytest.raises(WorkerConfigError):
            parse_config({"workers": outside})


def test_what_the_page_says_of_windows_is_the_platform_refusal() -> None:
    """Each sentence that gives Windows an exit status gives the refusal's: there every
    command fails with ``worker-platform-unsupported`` before it reads the file (the
    refusal itself is run in tests/supervisor/test_platforms.py)."""
    refusal = int(EXIT_CODES[REASON_CODES[Reason.PLATFORM_UNSUPPORTED]])
    sentences = re.split(r"(?<=[.;])\s", " ".join(TEXT.split()))
    windows = [sentence for sentence in sentences if "Windows" in sentence]
    said = [int(code) for sentence in windows for code in re.findall(r"\bexits? (\d+)", sentence)]
    assert said == [refusal]
    assert any(f"`{Reason.PLATFORM_UNSUPPORTED.value}`" in sentence for sentence in windows)
