"""The argparse-free fast path (the probes, a plain ``start``) reads the command line
exactly as argparse does."""

from __future__ import annotations

import pytest

from coretsia.supervisor import cli
from coretsia.supervisor.parser import build_parser

ACCEPTED = [
    ["status"],
    ["health", "--json"],
    ["stop", "--root", "/srv/app"],
    ["status", "--root=/srv/app", "--json"],
    ["health", "--json", "--root", "relative/dir"],
    ["stop", "--json", "--root=."],
    ["start"],
    ["start", "--root", "/srv/app"],
    ["start", "--root=relative/dir"],
]

LEFT_TO_ARGPARSE = [
    [],
    ["--version"],
    ["start", "--json"],  # a probe's option: argparse refuses it
    ["start", "--log-format", "json"],
    ["start", "--config", "other.toml"],
    ["start", "--root", "/a", "--config=other.toml"],
    ["start", "--ro", "/srv/app"],
    ["start", "--root", "-x"],
    ["status", "--help"],
    ["status", "-h"],
    ["status", "--ro", "/srv/app"],  # an abbreviation argparse accepts
    ["status", "--root", "/a", "--root", "/b"],
    ["status", "--json", "--json"],
    ["status", "--root"],
    ["status", "--root", "-x"],
    ["status", "--root="],
    ["status", "--", "--json"],
    ["status", "extra"],
]


@pytest.mark.parametrize("argv", ACCEPTED)
def test_fast_path_agrees_with_argparse(argv: list[str]) -> None:
    """Every form the fast path accepts gives argparse's own attributes."""
    fast = cli._plain_args(argv)
    assert fast is not None
    assert vars(fast) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE)
def test_anything_else_goes_to_argparse(argv: list[str]) -> None:
    """Help, abbreviations, repeats and mistakes are argparse's to read or refuse."""
    assert cli._plain_args(argv) is None
