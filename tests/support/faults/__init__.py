"""Faults injected into a real pool's processes (see ``sitecustomize.py`` beside this file).

Imported by test modules as ``faults`` (``tests/support`` is on pytest's pythonpath).
"""

from __future__ import annotations

import os
from pathlib import Path

from faults.sitecustomize import FAULTS

DIRECTORY = Path(__file__).resolve().parent


def fault_env(fault: str, arg: str | None = None) -> dict[str, str]:
    """The environment of a supervisor whose tree carries ``fault`` (one of the seam's)."""
    assert fault in FAULTS, fault
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(DIRECTORY), env.get("PYTHONPATH")]))
    env["CORETSIA_TEST_FAULT"] = fault
    if arg is not None:
        env["CORETSIA_TEST_FAULT_ARG"] = arg
    return env
