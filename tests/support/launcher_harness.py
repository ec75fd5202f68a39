"""The worker launcher, run for real: a fresh interpreter per launch, real descriptors.

A test publishes a generation into a temporary project root, starts
``python -m coretsia.supervisor.worker_side.launcher`` there (:class:`Launcher`) with one end of
a real socketpair (the worker channel) and the read end of a real pipe (the stop signal), and
asserts on the frames that arrive on the other end and on the exit status. Task sources are
the small modules of ``tests/support/apps/launcher_sources.py``, installed as the root's
``apps/sources.py``; they record what the launcher called in ``calls.log`` so that stdout and
stderr can be asserted empty.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from coretsia.supervisor.generation.spec import GenerationSpec, RuntimeEntrypoint, TaskType
from coretsia.worker_protocol._strict import dumps
from coretsia.worker_protocol.worker_channel import (
    Retiring,
    WorkerFrame,
    decode_worker_frame,
    encode_retire,
)

WAIT = 10.0  # upper bound on any single wait; tests finish far sooner

ArgvBuilder = Callable[[int, int, str], list[str]]
"""Builds the launcher's argv from the channel and stop descriptors it will inherit and
the pin of the root's published generation."""

CHANNEL = "<channel>"
STOP = "<stop>"
PIN = "<pin>"
"""Placeholders in :func:`contract_argv`'s changes for the descriptors a launcher inherits
and the published generation's pin."""

NO_PIN = "0123456789abcdef-000001-0123456789abcdef:" + "0" * 64
"""A pin of the right shape, for a root with no generation."""


def published_pin(root: Path) -> str:
    """The pin ``publish`` returned for the root's current generation (what the supervisor
    passes its workers), read back from the files; :data:`NO_PIN` when there is none."""
    base = root / "var" / "generations"
    try:
        gen_id = (base / "current").read_text("ascii").strip()
        document = json.loads((base / gen_id / "generation.json").read_bytes())
    except (OSError, ValueError):
        return NO_PIN
    return f"{gen_id}:{document['fingerprint']}"


def contract_argv(
    changes: dict[str, str | None] | None = None, extra: list[str] | None = None
) -> ArgvBuilder:
    """The five contract arguments, with some changed (None: left out), then ``extra``."""

    def build(channel_fd: int, stop_fd: int, pin: str) -> list[str]:
        values: dict[str, str | None] = {
            "artifact_root": "var/generations",
            "generation": PIN,
            "slot": "1",
            "channel_fd": CHANNEL,
            "stop_fd": STOP,
        }
        values.update(changes or {})
        known = {CHANNEL: str(channel_fd), STOP: str(stop_fd), PIN: pin}
        return [
            f"--coretsia-worker-{key.replace('_', '-')}={known.get(value, value)}"
            for key, value in values.items()
            if value is not None
        ] + (extra or [])

    return build


QUEUE_RUNTIME = RuntimeEntrypoint(
    name="bg.worker_queue", provider="coretsia.supervisor.worker_side.task_worker:serve_tasks"
)
"""What ``start`` freezes for a queue pool: the runtime entrypoint Coretsia provides."""


def launch_spec(**overrides: Any) -> GenerationSpec:
    """A generation spec the launcher accepts (task source ``sources:blocking``), with
    ``overrides`` applied (``source_options`` may be given as a dict)."""
    fields: dict[str, Any] = {
        "workers": 2,
        "max_requests": 1000,
        "task_type": TaskType.QUEUE,
        "runtime_entrypoint": QUEUE_RUNTIME,
        "task_source": "sources:blocking",
        "app_path": ("apps",),
    }
    fields.update(overrides)
    if isinstance(fields.get("source_options"), dict):
        fields["source_options"] = tuple(sorted(fields["source_options"].items()))
    return GenerationSpec(**fields)


def respec(spec: GenerationSpec, **changes: Any) -> GenerationSpec:
    """``spec`` with some fields changed (values a worker would refuse too)."""
    return GenerationSpec(**{**spec._asdict(), **changes})


def forge_current(root: Path, changes: dict[str, object]) -> None:
    """Replace the root's current generation with one whose spec has ``changes``, written
    the way ``publish`` writes (canonical, fingerprinted, its id committing to the
    fingerprint), so that :func:`published_pin` names it: only the spec's values are off."""
    base = root / "var" / "generations"
    old_id = (base / "current").read_text("ascii").strip()
    document = json.loads((base / old_id / "generation.json").read_bytes())
    document["spec"].update(changes)
    digest = hashlib.sha256(dumps(document["spec"])).hexdigest()
    document["fingerprint"] = digest
    gen_id = digest[:16] + old_id[16:]
    (base / old_id).rename(base / gen_id)
    path = base / gen_id / "generation.json"
    path.write_bytes(dumps(document) + b"\n")
    (base / "current").write_text(gen_id + "\n", "ascii")


def recorded_calls(root: Path) -> list[str]:
    """What the test task sources recorded in the root's ``calls.log``, in order."""
    log = root / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@dataclass
class Outcome:
    """How a launcher ended: its exit status, every frame it sent, and its output."""

    code: int
    frames: list[WorkerFrame]
    stdout: bytes
    stderr: bytes


class Launcher:
    """One launcher process and our ends of its channel and stop pipe; always reaped."""

    def __init__(
        self,
        root: Path,
        *,
        slot: int = 1,
        argv: ArgvBuilder | None = None,
        parent_pid: str | None = None,
        python_flags: tuple[str, ...] = (),
        artifact_root: str = "var/generations",
    ) -> None:
        self.channel, child_channel = socket.socketpair()
        stop_read, self.stop_write = os.pipe()
        self.buffer = b""
        self.frames: list[WorkerFrame] = []
        self.eof = False
        self.reaped = False
        env = dict(os.environ)
        env["CORETSIA_WORKER_PARENT_PID"] = str(os.getpid()) if parent_pid is None else parent_pid
        if parent_pid == "":
            del env["CORETSIA_WORKER_PARENT_PID"]
        build = argv or contract_argv({"artifact_root": artifact_root, "slot": str(slot)})
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    *python_flags,
                    "-m",
                    "coretsia.supervisor.worker_side.launcher",
                    *build(child_channel.fileno(), stop_read, published_pin(root)),
                ],
                cwd=root,
                env=env,
                pass_fds=(child_channel.fileno(), stop_read),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        finally:
            child_channel.close()
            os.close(stop_read)

    def next_frame(self) -> WorkerFrame | None:
        """The next frame, or None at EOF; fails the test after ``WAIT`` seconds."""
        deadline = time.monotonic() + WAIT
        while b"\n" not in self.buffer and not self.eof:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no frame within the wait"
            self.channel.settimeout(remaining)
            chunk = self.channel.recv(4096)
            self.eof = not chunk
            self.buffer += chunk
        if b"\n" not in self.buffer:
            assert self.buffer == b"", "truncated frame"
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        frame = decode_worker_frame(line + b"\n")
        self.frames.append(frame)
        if isinstance(frame, Retiring):
            self.channel.sendall(encode_retire())  # grant it, as the supervisor does
        return frame

    def stop(self) -> None:
        """Request a cooperative stop: close the only write end of the stop pipe."""
        if self.stop_write >= 0:
            os.close(self.stop_write)
            self.stop_write = -1

    def finish(self) -> Outcome:
        """Read the frames up to EOF, then reap the process."""
        while self.next_frame() is not None:
            pass
        stdout, stderr = self.proc.communicate(timeout=WAIT)
        self.reaped = True
        return Outcome(self.proc.returncode, self.frames, stdout, stderr)

    def __enter__(self) -> Launcher:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.reaped:
            self.proc.kill()  # harmless if it already exited; we reap it either way
            self.proc.communicate(timeout=WAIT)
        self.channel.close()
        self.stop()


def launch(root: Path, **kwargs: Any) -> Outcome:
    """Run a launcher that is expected to end on its own, and return how it ended."""
    with Launcher(root, **kwargs) as launcher:
        return launcher.finish()


def assert_quiet(outcome: Outcome) -> None:
    """A launcher writes nothing to stdout or stderr: the channel is its only voice."""
    assert outcome.stdout == b""
    assert outcome.stderr == b""


def read_line(stream: object, timeout: float) -> bytes:
    """One line from a child's output pipe, waiting at most ``timeout`` seconds for it."""
    assert hasattr(stream, "fileno")
    assert hasattr(stream, "readline")
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, "no output within the wait"
    line: bytes = stream.readline()
    return line
