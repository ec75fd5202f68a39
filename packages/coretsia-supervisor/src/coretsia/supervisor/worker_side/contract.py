"""The spawner's contract, checked before anything boots: argv, artifact root, stop fd.

The contract itself (five ``--coretsia-worker-*`` arguments, the descriptors, the
environment) is written in :mod:`coretsia.supervisor.worker_side.launcher`. A spawner that breaks it
is a bug of the guardian or the proc host, not of the application, so every refusal here
is ``WorkerExit(2)`` without a frame: nothing the worker could say would help.
"""

from __future__ import annotations

import os

from coretsia.supervisor.generation.published import is_pin
from coretsia.supervisor.worker_side.exits import EXIT_CONTRACT, WorkerExit
from coretsia.worker_protocol.parent_watch import is_decimal
from coretsia.worker_protocol.paths import is_safe_relative_path

ARG_PREFIX = "--coretsia-worker-"
ARGS = ("artifact-root", "generation", "slot", "channel-fd", "stop-fd")
FORBIDDEN_ARGS = ("module-manifest", "config", "container")
"""Seed 000: a child boots from the whole generation, never from individual files."""


def parse(argv: list[str]) -> tuple[str, str, int, int, int]:
    """Return (artifact root, generation pin, slot, channel fd, stop fd) or raise
    ``WorkerExit(2)``."""
    values: dict[str, str] = {}
    for arg in argv:
        name, sep, value = arg.partition("=")
        key = name[len(ARG_PREFIX) :] if name.startswith(ARG_PREFIX) else ""
        if key in FORBIDDEN_ARGS or key not in ARGS or not sep or key in values:
            raise WorkerExit(EXIT_CONTRACT)
        values[key] = value
    if len(values) != len(ARGS):
        raise WorkerExit(EXIT_CONTRACT)
    numbers = [values["slot"], values["channel-fd"], values["stop-fd"]]
    if not all(is_decimal(number) for number in numbers):
        raise WorkerExit(EXIT_CONTRACT)
    slot, channel_fd, stop_fd = (int(number) for number in numbers)
    if channel_fd < 3 or stop_fd < 3 or channel_fd == stop_fd or not is_pin(values["generation"]):
        raise WorkerExit(EXIT_CONTRACT)
    return values["artifact-root"], values["generation"], slot, channel_fd, stop_fd


def project_root(artifact_root: str) -> str:
    """The working directory (resolved), once the artifact root is proven to lie inside it."""
    if not is_safe_relative_path(artifact_root):
        raise WorkerExit(EXIT_CONTRACT)
    root = os.path.realpath(os.getcwd())
    target = os.path.realpath(os.path.join(root, artifact_root))
    inside = os.path.normcase(root).rstrip(os.sep) + os.sep
    if not os.path.normcase(target).startswith(inside):
        raise WorkerExit(EXIT_CONTRACT)
    return root


def adopt_stop_fd(fd: int) -> None:
    """Check the stop descriptor is open and keep it from the application's children."""
    try:
        os.fstat(fd)
        os.set_inheritable(fd, False)  # noqa: FBT003 - positional-only
    except OSError:
        raise WorkerExit(EXIT_CONTRACT) from None
