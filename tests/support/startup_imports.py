"""What the two paths with a start-up budget import, measured on real processes.

* The boot: an exec'd worker, spawned with the supervisor's own ``LAUNCHER_CODE`` and the
  guardian's contract, up to its application's import (the application's module records
  ``sys.modules`` as its first statement): a task slot's, whose application is its task
  source, and a process entry's, whose application is the entry's module. What Coretsia
  imports after that counts too: a task worker's, up to its first ``receive`` (``ready``
  sent, the heartbeat and the memory watch on: every worker runs them, and the fork
  server preloads them for the same reason), and an entry module's ``@process``
  registration (the ``coretsia.supervisor.process`` facade), which every worker of it runs.
* The probe: ``coretsia-supervisor status`` and ``health``, as a Kubernetes exec probe
  runs them, against a live (stub) endpoint so the whole path runs: lock, locator,
  connect, handshake, request, answer.

Their budgets and what each import costs them are in ``docs/performance.md`` ("Start-up
import rules"); ``tests/test_import_rules.py`` holds the code to those rules.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from stub_supervisor import SUMMARY, Session

from coretsia.supervisor.daemon.slots import LAUNCHER_CODE
from coretsia.supervisor.generation.published import publish
from coretsia.supervisor.generation.spec import GenerationSpec, RuntimeEntrypoint, TaskType
from coretsia.supervisor.process import load_snapshot
from coretsia.worker_protocol.catalogue import HealthReason
from coretsia.worker_protocol.control import (
    ControlRequest,
    HealthResponse,
    StatusResponse,
)
from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV
from coretsia.worker_protocol.vocabulary import ControlCommand

WAIT = 30.0
CONSOLE = str(Path(sys.executable).parent / "coretsia-supervisor")

APP = """\
import sys
_MODULES = sorted(sys.modules)  # first: what the boot imported before the application
import json, os
with open(os.path.join(os.getcwd(), "boot-modules.json"), "w") as out:
    json.dump(_MODULES, out)
class Serving:
    def __init__(self, ctx):
        self.ctx = ctx
    def assert_ready(self):
        pass
    def receive(self):  # ready was sent, the heartbeat and the memory watch run
        with open(os.path.join(os.getcwd(), "serving-modules.json"), "w") as out:
            json.dump(sorted(sys.modules), out)
        raise SystemExit(0)
def source(ctx):
    return Serving(ctx)
from coretsia.supervisor.process import process
@process(name="registered")
class Registered:
    enabled = True
    enable_async = False
    def execute(self, pool, worker_id):
        pass
with open(os.path.join(os.getcwd(), "entry-modules.json"), "w") as out:
    json.dump(sorted(sys.modules), out)
"""

ENTRY = {
    "schema": 1,
    "ipc_type": "none",
    "msg_queue_key": 0,
    "entries": [
        {
            "worker_id": 0,
            "name": "entry",
            "target": "boot_probe:entry",
            "kind": "function",
            "enable_async": False,
        }
    ],
    "declarations": [],
}
"""A generation's process snapshot with one entry in the probe's module."""


def boot_imports(root: Path, *, entry: bool = False) -> set[str]:
    """Every module an exec'd worker holds when its application's import begins: a task
    slot's, or with ``entry`` a process entry's."""
    (root / "apps").mkdir(parents=True, exist_ok=True)
    (root / "apps" / "boot_probe.py").write_text(APP)
    spec = GenerationSpec(
        workers=1,
        max_requests=1000,
        task_type=TaskType.QUEUE,
        runtime_entrypoint=RuntimeEntrypoint(
            name="bg.worker_queue",
            provider="coretsia.supervisor.worker_side.task_worker:serve_tasks",
        ),
        task_source="boot_probe:source",
        app_path=("apps",),
        heartbeat_timeout_ms=60_000,
        max_memory_mb=100_000,
        processes=load_snapshot(ENTRY) if entry else None,
        event_loop="asyncio" if entry else None,
    )
    pin = publish(root, spec)
    ours, theirs = socket.socketpair()
    stop_read, stop_write = os.pipe()
    argv = [
        sys.executable, "-c", LAUNCHER_CODE,
        "--coretsia-worker-artifact-root=var/generations", f"--coretsia-worker-slot={int(entry)}",
        f"--coretsia-worker-generation={pin}",
        f"--coretsia-worker-channel-fd={theirs.fileno()}", f"--coretsia-worker-stop-fd={stop_read}",
    ]  # fmt: skip
    env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}
    try:
        subprocess.run(
            argv,
            cwd=root,
            env=env,
            pass_fds=(theirs.fileno(), stop_read),
            capture_output=True,
            timeout=WAIT,
            check=False,
        )
    finally:
        for end in (ours, theirs):
            end.close()
        os.close(stop_read)
        os.close(stop_write)
    found = set(json.loads((root / "boot-modules.json").read_text()))
    later = root / ("entry-modules.json" if entry else "serving-modules.json")
    return found | {name for name in json.loads(later.read_text()) if name.startswith("coretsia.")}


def answer(session: Session, request: ControlRequest) -> None:
    """A stub supervisor's script for both probes: a running pool, every slot ready."""
    if request.command is ControlCommand.HEALTH:
        session.send(HealthResponse(SUMMARY, healthy=True, reason=HealthReason.HEALTHY))
    else:
        session.send(StatusResponse(SUMMARY))


def probe_imports(root: Path, command: str) -> set[str]:
    """Every module ``coretsia-supervisor <command>`` imports against the live endpoint of
    ``root`` (a stub answering with :func:`answer`), run as a probe runs it: the console
    script. The command must succeed."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", CONSOLE, command, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("import time:")]
    return {ln.rsplit("|", 1)[1].strip() for ln in lines[1:]}  # the first is the header


def coretsia_modules(modules: set[str]) -> set[str]:
    """The packages' own modules among ``modules``."""
    return {name for name in modules if name.startswith("coretsia.")}
