"""The control credential: drawn afresh at every start, fixed for the whole run.

README and operations.md: "a 256-bit credential rotated at every start"; the endpoint
hash, keyed by the root's own secret, "stays the same across restarts of the same root".
Within a run the credential must not change when workers are replaced: the locator a
client read before a recycle still opens the supervisor after it.
"""

from __future__ import annotations

import json
from pathlib import Path

from pools import Supervisors, cli, wait_for, write_root

from coretsia.worker_protocol.locator import decode_locator

LOCATOR = "var/tmp/worker.lifecycle.json"


def _credential(root: Path) -> str:
    return decode_locator((root / LOCATOR).read_bytes()).credential


def _endpoint_hash(root: Path) -> str:
    value: str = json.loads(cli(root, "status", "--json").stdout)["endpoint_hash"]
    return value


def _readies(root: Path) -> int:
    """How many workers have been ready so far (``lifecycle_app:logged`` notes each)."""
    log = root / "recycle.log"
    return log.read_text().count("ready") if log.exists() else 0


def test_new_credential_each_start_same_through_recycles(
    root: Path, supervisors: Supervisors
) -> None:
    """Two starts draw two different 256-bit credentials under one endpoint hash; within a
    run, workers replaced after ``max_requests`` leave the credential as it was."""
    write_root(root, task_source="lifecycle_app:logged", max_requests=5)
    first = supervisors.running(root)
    credential = _credential(root)
    endpoint = _endpoint_hash(root)
    wait_for(lambda: _readies(root) >= 6)  # each slot replaced at least twice, on average
    assert _credential(root) == credential
    assert cli(root, "status").returncode == 0  # the supervisor still holds it
    assert cli(root, "stop").returncode == 0
    assert first.finish() == 0

    second = supervisors.running(root)
    rotated = _credential(root)
    assert rotated != credential
    assert len(bytes.fromhex(rotated)) == 32
    assert _endpoint_hash(root) == endpoint
    assert cli(root, "stop").returncode == 0
    assert second.finish() == 0
