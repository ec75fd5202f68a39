"""Seed 003's ``ProcessManagerInterface``: the manager fits it, for mypy and at run time.

The assignments below are what ``mypy tests`` checks: if ``ProcessManager`` lost a
method of the contract, or changed a signature incompatibly, the typecheck fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from coretsia.supervisor import ProcessManager, ProcessManagerInterface
from coretsia.supervisor.process import ProcessNotFoundError


def entry(pool: Any, worker_id: int) -> None:
    """A module-level entry."""


def register(manager: ProcessManagerInterface) -> ProcessManagerInterface:
    """Framework code written against the contract alone."""
    return manager.add(entry, name="one").add_batch(2, entry, name="two").set_ipc_type("none")


def test_the_manager_satisfies_the_contract() -> None:
    manager: ProcessManagerInterface = ProcessManager()
    assert register(manager) is manager
    assert list(manager.all()) == ["one", "two:0", "two:1"]
    assert manager.has("two:1")
    assert not manager.has("two")
    assert manager.get("one") is manager.get("one")
    with pytest.raises(ProcessNotFoundError):
        manager.get("three")
    assert manager.set_msg_queue_key(7) is manager
    assert (manager.get_ipc_type(), manager.get_msg_queue_key()) == ("none", 7)
    assert manager.stop() is manager  # before start: the registry is cancelled
    manager.start()  # a cancelled registry starts nothing


def test_the_contract_lists_seed_003s_methods_only() -> None:
    """Seed 003's table, in Python names: nothing added, nothing missing."""
    members = {name for name in vars(ProcessManagerInterface) if not name.startswith("_")}
    assert members == {
        "add",
        "add_batch",
        "all",
        "has",
        "get",
        "set_ipc_type",
        "get_ipc_type",
        "set_msg_queue_key",
        "get_msg_queue_key",
        "start",
        "stop",
    }
