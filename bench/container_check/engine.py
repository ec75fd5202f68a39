"""Find a Docker engine that answers, or start one of our own and stop it at the end.

Ours is ``dockerd --bridge=none --iptables=false --ip-forward=false``: it makes no bridge,
no iptables rule and no forwarding, so it changes nothing of the machine's network
(containers run with ``--network none``, builds with ``--network host``). Its data root
lives on between runs (``CORETSIA_DOCKER_STATE``, default ``/var/lib/coretsia-container``),
so the local base image it holds is built once; its socket, pidfile and exec root are
under ``/run/coretsia-container``, apart from any system engine's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from container_check.docker import Docker
from container_check.errors import EngineUnavailable

SYSTEM_HOST = "unix:///var/run/docker.sock"
RUNTIME = Path("/run/coretsia-container")
OWN_HOST = f"unix://{RUNTIME}/docker.sock"
READY_S = 60.0
"""How long our dockerd may take to answer (seen here: about 1 s)."""
STOP_S = 30.0
"""How long it may take to stop (it stops its containerd first)."""


def state_dir() -> Path:
    """The persistent data root's parent (the engine's images live there)."""
    return Path(os.environ.get("CORETSIA_DOCKER_STATE", "/var/lib/coretsia-container"))


class Engine:
    """An engine that answers; ``process`` is set when this session started it."""

    def __init__(self, docker: Docker, process: subprocess.Popen[bytes] | None) -> None:
        self.docker = docker
        self.process = process

    @property
    def ours(self) -> bool:
        """True if this session started the engine (so it stops it, and may prune)."""
        return self.process is not None

    def stop(self) -> None:
        """Stop the engine if this session started it: SIGTERM, then SIGKILL if it hangs."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_S)


def find_or_start() -> Engine:
    """An engine that answers: ``$DOCKER_HOST``'s, the system's, or one started here."""
    client = shutil.which("docker")
    if client is None:
        raise EngineUnavailable("docker-client-missing")
    # OWN_HOST answering is one this check started and could not stop (an interrupted
    # run): used as found, so it is left running as it was.
    for host in (os.environ.get("DOCKER_HOST"), SYSTEM_HOST, OWN_HOST):
        if host and Docker(client, host).answers():
            return Engine(Docker(client, host), None)
    own = Docker(client, OWN_HOST)
    return Engine(own, _start_dockerd(own))


def _start_dockerd(docker: Docker) -> subprocess.Popen[bytes]:
    """Start our dockerd in the background and wait (bounded) until it answers."""
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineUnavailable("dockerd-missing")
    if os.geteuid() != 0:
        raise EngineUnavailable("dockerd-needs-root")
    RUNTIME.mkdir(mode=0o700, parents=True, exist_ok=True)
    state = state_dir()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (state / "dockerd.log").open("ab") as log:
        process = subprocess.Popen(
            [dockerd, "--bridge=none", "--iptables=false", "--ip-forward=false",
             "--data-root", str(state / "docker"), "--exec-root", str(RUNTIME / "exec"),
             "--pidfile", str(RUNTIME / "dockerd.pid"), "--host", docker.host],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + READY_S
    while not docker.answers():
        if process.poll() is not None:
            raise EngineUnavailable("dockerd-exited")
        if time.monotonic() > deadline:
            Engine(docker, process).stop()
            raise EngineUnavailable("dockerd-not-answering")
        time.sleep(0.2)  # the socket appears when it is ready: nothing to wait on but it
    return process
