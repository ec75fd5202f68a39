"""The probe path stays light: no trio, psutil, cattrs or attrs on ``status``, nor the
slow standard modules (dataclasses, typing, pathlib; argparse only in the command).

``status`` and ``health`` are Kubernetes exec probes; every import is paid at every
probe. Checked with ``python -X importtime`` against a real (stub) endpoint, so the whole
path runs: lock probe, locator, connect, handshake (``hmac`` and ``hashlib`` are allowed,
loaded on first use), request, answer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stub_supervisor import Session, StartStub

from coretsia.worker_protocol.control import ControlRequest, PoolSummary, StatusResponse
from coretsia.worker_protocol.vocabulary import Driver, PoolStatus, Transport

SUMMARY = PoolSummary(
    pool_status=PoolStatus.RUNNING,
    pid=1,
    worker_count=1,
    ready_worker_count=1,
    driver=Driver.FORK,
    control_transport=Transport.UNIX,
    endpoint_hash="0" * 32,
)

HEAVY = {"trio", "psutil", "cattrs", "attrs", "attr", "asyncio"}

SLOW = {"dataclasses", "inspect", "typing", "pathlib", "argparse"}
"""Standard modules a probe must not import either: each costs milliseconds per probe
(dataclasses with inspect about 10 ms, argparse's parser about 5 ms, pathlib 4 ms)."""


def _imported(code: list[str]) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("import time:")]
    return {ln.rsplit("|", 1)[1].strip().split(".")[0] for ln in lines[1:]} | {
        f"exit={result.returncode}"
    }


def _answer(session: Session, _request: ControlRequest) -> None:
    session.send(StatusResponse(SUMMARY))


def test_status_client_path_is_light(supervisor: StartStub) -> None:
    """ControlClient.status() against a live endpoint imports nothing heavy."""
    stub = supervisor(_answer)
    code = (
        "from coretsia.worker_protocol.client import ControlClient;"
        f"ControlClient({str(stub.root)!r}).status()"
    )
    modules = _imported(["-c", code])
    assert "exit=0" in modules
    assert modules & (HEAVY | SLOW) == set()


def test_status_command_is_light(supervisor: StartStub) -> None:
    """The status command, as a probe runs it, imports nothing heavy; argparse reads its
    command line, as every command's (measured within the probe's budget:
    docs/performance.md, "`status` through argparse only")."""
    stub = supervisor(_answer)
    modules = _imported(["-m", "coretsia.supervisor.cli", "status", "--root", str(stub.root)])
    assert "exit=0" in modules
    assert modules & (HEAVY | SLOW) == {"argparse"}


def test_public_package_is_sans_io(tmp_path: Path) -> None:
    """Importing the public protocol names loads no socket, event loop or subprocess."""
    code = "import coretsia.worker_protocol as p; [getattr(p, n) for n in p.__all__]"
    modules = _imported(["-c", code])
    assert "exit=0" in modules
    assert modules & (HEAVY | {"socket", "selectors", "subprocess"}) == set()
