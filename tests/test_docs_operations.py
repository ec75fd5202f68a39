"""docs/operations.md stays true to the catalogue: every token, every exit code.

The troubleshooting table's first four columns are generated from
``coretsia.worker_protocol.catalogue`` (``tests/support/catalogue_table.py``); these tests
fail when a reason token, a code, an exit status or an explanation changes without the page.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from catalogue_table import catalogue_rows
from lock_holder import HoldLock

from coretsia.worker_protocol.catalogue import EXIT_CODES, ErrorCode, HealthReason, Reason
from coretsia.worker_protocol.exit_codes import ExitCode
from coretsia.worker_protocol.lifecycle import FENCE_PATH, LOCK_PATH

DOC = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
TEXT = DOC.read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text of the ``## title`` section, up to the next ``## `` heading."""
    start = TEXT.index(f"\n## {title}\n")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start : end if end != -1 else len(TEXT)]


def _exit_table_rows() -> dict[int, str]:
    """First column (an integer) to second column (the name) of the exit-code table."""
    rows: dict[int, str] = {}
    for line in _section("Exit codes").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            rows[int(cells[0])] = cells[1].strip("`")
    return rows


@pytest.mark.parametrize("reason", list(Reason), ids=lambda r: r.value)
def test_every_reason_token_appears(reason: Reason) -> None:
    """Each reason token of the catalogue is named on the page."""
    assert f"`{reason.value}`" in TEXT


@pytest.mark.parametrize("code", list(ExitCode), ids=lambda c: c.name)
def test_every_exit_code_is_in_the_exit_code_table(code: ExitCode) -> None:
    """Each ExitCode value has its row, under its own name, in the exit-code table."""
    assert _exit_table_rows().get(int(code)) == code.name


def test_exit_code_table_has_no_stale_row() -> None:
    """The exit-code table lists ExitCode values and nothing else."""
    assert set(_exit_table_rows()) == {int(code) for code in ExitCode}


def test_troubleshooting_table_starts_with_the_generated_rows() -> None:
    """Each row is the generated catalogue row (code, token, exit status, meaning), in
    catalogue order, followed by one hand-written cell: what this release does."""
    section = _section("Troubleshooting: every error code and reason token")
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    generated = catalogue_rows()
    assert len(rows) == len(generated)
    for row, expected in zip(rows, generated, strict=True):
        assert row.startswith(expected + " "), expected
        assert row.endswith(" |")


@pytest.mark.parametrize("reason", list(HealthReason), ids=lambda r: r.value)
def test_every_health_reason_appears(reason: HealthReason) -> None:
    """Each health reason is explained on the page."""
    assert f"`{reason.value}`" in TEXT


COMMANDS = ("start", "stop", "status", "health")
SUPERVISOR = Path(sys.executable).with_name("coretsia-supervisor")


def _doc_exit_codes(command: str) -> set[int]:
    """The exit codes the page's table gives ``command`` (its column, "-" is none)."""
    lines = _section("Exit codes").splitlines()
    header = next(line for line in lines if line.startswith("| Code |"))
    column = [cell.strip() for cell in header.strip().strip("|").split("|")].index(f"`{command}`")
    codes = set()
    for line in lines:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) > column and cells[0].isdigit() and cells[column] != "-":
            codes.add(int(cells[0]))
    return codes


@pytest.mark.parametrize("command", COMMANDS)
def test_help_lists_every_exit_code_of_the_command(command: str) -> None:
    """``COMMAND --help`` lists exactly the codes the exit-code table gives that command."""
    result = subprocess.run(
        [str(SUPERVISOR), command, "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    epilog = " ".join(result.stdout.split("exit codes:", 1)[1].split())
    listed = [int(code) for code in re.findall(r"(?:^|; )(\d+) ", epilog)]
    assert listed == sorted(_doc_exit_codes(command))
    assert all(code in {int(c) for c in ExitCode} for code in listed)


def _console(after: str) -> list[tuple[list[str], list[str]]]:
    """The commands of the first ``console`` block after ``after``: each one's words
    (root and comment left out) and the lines the page shows it print."""
    block = TEXT[TEXT.index(after) :].split("```console\n", 1)[1].split("```", 1)[0]
    shown: list[tuple[list[str], list[str]]] = []
    for text in block.splitlines():
        if text.startswith("$ "):
            words = text[2:].split("#", 1)[0].split()
            at = words.index("--root")
            shown.append((words[:at] + words[at + 2 :], []))
        else:
            shown[-1][1].append(text)
    return shown


def _run(root: Path, words: list[str]) -> tuple[int, list[str]]:
    """Run a ``coretsia-supervisor`` command on ``root``: its status and what it printed
    (stdout, then stderr without the JSON log lines)."""
    result = subprocess.run(
        [str(SUPERVISOR), *words[1:], "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    errors = [text for text in result.stderr.splitlines() if not text.startswith("{")]
    return result.returncode, result.stdout.splitlines() + errors


def _tree(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


QUICKSTART = DOC.parent / "examples" / "quickstart" / "coretsia.toml"
FAILED_STARTS = [
    QUICKSTART.read_text(),  # while the pool already runs
    "[worker]\nstop_timeout = 30000\n",
    '[worker]\ntask_source = "sqlite"\n',
    '[worker]\ntask_type = "http"\n',
    None,  # --root /nonexistent
]
"""The configuration of each failed start the page shows, in its order (its comments say
which)."""


@pytest.mark.parametrize("index", range(len(FAILED_STARTS)))
def test_each_failed_start_shown_is_what_start_prints(
    tmp_path: Path, hold_lock: HoldLock, index: int
) -> None:
    """Run for real, each example prints exactly its line, exits with its code's status and
    leaves the root as it found it."""
    shown = _console("On failure it prints")
    assert len(shown) == len(FAILED_STARTS)
    words, lines = shown[index]
    root = tmp_path / "root"
    config = FAILED_STARTS[index]
    if config is not None:
        root.mkdir()
        (root / "coretsia.toml").write_text(config)
    if index == 0:
        assert hold_lock(str(root / LOCK_PATH)).first_line == "held"
    before = _tree(root) if root.exists() else None
    assert words == ["coretsia-supervisor", "start"]
    status, printed = _run(root, words)
    assert printed == lines
    assert status == EXIT_CODES[ErrorCode(lines[0].split(":", 1)[0])]
    assert (_tree(root) if root.exists() else None) == before


def test_a_draining_root_answers_as_shown(tmp_path: Path, hold_lock: HoldLock) -> None:
    """Lock free, fence held by a process ``start`` cannot recognise: every command
    prints what the page shows and exits 1."""
    (tmp_path / "coretsia.toml").write_text(QUICKSTART.read_text())
    assert hold_lock(str(tmp_path / FENCE_PATH)).first_line == "held"
    shown = _console("**When a killed generation is still draining**")
    assert {words[1] for words, _lines in shown} == {"status", "health", "stop", "start"}
    for words, lines in shown:
        assert _run(tmp_path, words) == (1, lines), words
