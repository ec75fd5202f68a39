"""Fixtures for client tests: a root as a running pool shows it, and a stub supervisor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lock_holder import HoldLock
from stub_supervisor import Script, StartStub, StubSupervisor

from coretsia.worker_protocol.lifecycle import LOCK_PATH
from coretsia.worker_protocol.vocabulary import Transport


@pytest.fixture
def supervisor(runtime_root: Path, hold_lock: HoldLock) -> Iterator[StartStub]:
    """Start a stub supervisor for ``runtime_root`` with the lock held and the locator
    written."""
    started: list[StubSupervisor] = []

    def start(
        script: Script, transport: Transport = Transport.UNIX, proves_with: str | None = None
    ) -> StubSupervisor:
        hold_lock(str(runtime_root / LOCK_PATH))
        stub = StubSupervisor(runtime_root, transport, script, proves_with)
        stub.write_locator()
        started.append(stub)
        return stub

    yield start
    for stub in started:
        stub.close()
