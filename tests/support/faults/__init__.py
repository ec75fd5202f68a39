"""Faults injected into a real pool's processes (see ``sitecustomize.py`` beside this file).

Imported by test modules as ``faults`` (``tests/support`` is on pytest's pythonpath).
"""

from __future__ import annotations

from pathlib import Path

from site_hooks import pythonpath_first

from faults.sitecustomize import FAULTS

DIRECTORY = Path(__file__).resolve().parent


def fault_env(fault: str, arg: str | None = None) -> dict[str, str]:
    """The environment of a supervisor whose tree carries ``fault`` (one of the seam's)."""
    assert fault in FAULTS, fault
    env = pythonpath_first(DIRECTORY)
    env["CORETSIA_TEST_FAULT"] = fault
    if arg is not None:
        env["CORETSIA_TEST_FAULT_ARG"] = arg
    return env
