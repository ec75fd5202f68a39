"""Per-worker freshness, in every mode: what a forked worker would share with its siblings
(and an executed one would not) is fresh in each worker, or shared as documented.

Each worker of ``fresh_app:report`` writes what it inherited before ``ready``
(``tests/support/apps/fresh_app.py``); the ``exec`` modes are the reference the fork
server must match.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pools import Supervisor, Supervisors, cli, install_app, write_root

WORKERS = 3

ROBUST_LIST_KNOWN = True if os.uname().machine in ("x86_64", "aarch64") else None
"""What a worker reports of its robust-mutex list: registered, where the app can ask."""

EXEC_DISPOSITIONS = {"SIGINT": "default_int_handler", "SIGPIPE": "ignore", "SIGXFSZ": "ignore"}
"""What a fresh interpreter sets up itself; every other signal is at its default."""


def _start(root: Path, supervisors: Supervisors) -> tuple[Supervisor, list[dict[str, Any]]]:
    for old in root.glob("fresh-*.json"):
        old.unlink()
    install_app(root, "fresh_app.py")
    write_root(root, workers=WORKERS, task_source="fresh_app:report")
    supervisor = supervisors(root)
    supervisor.wait_running()
    facts = [json.loads((root / f"fresh-{slot}.json").read_text()) for slot in range(WORKERS)]
    return supervisor, facts


def _stop(supervisor: Supervisor, root: Path) -> None:
    assert cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0


class TestFreshness:
    def test_each_worker_is_as_an_executed_interpreter(
        self, root: Path, supervisors: Supervisors, driver: str
    ) -> None:
        """argv, signals, mask, threads, descriptors, session, parent, the C library's
        thread state (its cached thread id, the robust-mutex list): exec's, in every mode;
        the random state differs from worker to worker."""
        supervisor, facts = _start(root, supervisors)
        spawner = supervisor.proc_host() if driver == "proc" else supervisor.guardian()
        assert [worker.ppid() for worker in supervisor.workers()] == [spawner.pid] * WORKERS
        _stop(supervisor, root)
        for slot, fact in enumerate(facts):
            assert fact["argv"][:2] == ["-c", "--coretsia-worker-artifact-root=var/generations"]
            assert fact["argv"][2].startswith("--coretsia-worker-generation=")
            assert fact["argv"][3:] == [
                f"--coretsia-worker-slot={slot}",
                "--coretsia-worker-channel-fd=3",
                "--coretsia-worker-stop-fd=4",
            ]
            changed = {name: how for name, how in fact["signals"].items() if how != "default"}
            assert changed == EXEC_DISPOSITIONS
            assert fact["blocked"] == 0
            assert (fact["threads"], fact["tasks"]) == (1, 1)
            assert fact["fds"] == [0, 1, 2, 3, 4, 5, 6]  # 6: its own epoll set (control tests)
            assert fact["session"] is True
            assert fact["thread_clock"] is True
            assert fact["robust_list"] is ROBUST_LIST_KNOWN
        assert len({fact["random"] for fact in facts}) == WORKERS

    def test_the_hash_secret(self, root: Path, supervisors: Supervisors, spawn: str) -> None:
        """exec: one per worker; forkserver: one per generation, shared by its workers."""
        supervisor, first = _start(root, supervisors)
        _stop(supervisor, root)
        supervisor, second = _start(root, supervisors)
        _stop(supervisor, root)
        if spawn == "exec":
            assert len({fact["hash"] for fact in first + second}) == 2 * WORKERS
        else:
            assert len({fact["hash"] for fact in first}) == 1
            assert len({fact["hash"] for fact in second}) == 1
            assert first[0]["hash"] != second[0]["hash"]


def test_the_fork_server_runs_no_thread_and_holds_only_its_channel(
    root: Path, supervisors: Supervisors, spawn: str
) -> None:
    """Nothing a worker must not inherit: one thread, descriptors 0 to 2 and its channel."""
    if spawn == "exec":
        pytest.skip("no fork server in the exec mode")
    supervisor, _facts = _start(root, supervisors)
    server = supervisor.fork_server()
    assert server.num_threads() == 1
    assert server.open_files() == []  # regular files
    assert server.num_fds() == 4  # 0, 1, 2 and the channel
    assert server.ppid() == supervisor.guardian().pid
    _stop(supervisor, root)
