"""A pool mounted in an ASGI application's lifespan, under a real uvicorn process.

``tests/support/apps/mounted_app.py`` is copied into a root and served by
``python -m uvicorn mounted_app:app`` on a listening TCP socket the test made and handed
over (``--fd``): a request queues in its backlog until the lifespan has started, so the
first answer is itself the event "the pool is running" (bounded by the client's timeout).
SIGTERM to uvicorn makes it leave its lifespan, which stops the pool: uvicorn's exit is
waited for (bounded), and then every pid of the pool must already be gone.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pools
import psutil
import pytest

WAIT = 60.0

UVICORN = [sys.executable, "-m", "uvicorn", "mounted_app:app", "--lifespan", "on"]
UVICORN += ["--log-level", "warning", "--no-access-log"]


class Server:
    """``uvicorn mounted_app:app`` in ``root``, serving the socket bound here."""

    def __init__(self, root: Path) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        fd = listener.fileno()
        self.proc = subprocess.Popen(
            [*UVICORN, "--fd", str(fd)],
            cwd=root,
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        listener.close()  # uvicorn holds its own copy

    def get(self, path: str) -> tuple[int, dict[str, object]]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)


@pytest.fixture
def server(root: Path) -> Iterator[Server]:
    pools.install_app(root, "mounted_app.py")
    started = Server(root)
    yield started
    if started.proc.poll() is None:  # a failed test: the pool's processes go too
        for proc in [*started.descendants(), psutil.Process(started.proc.pid)]:
            proc.kill()
        started.proc.communicate(timeout=WAIT)


@pytest.mark.parametrize("root", ["fork", "proc"], indirect=True)
def test_uvicorn_serves_while_the_pool_runs_and_sigterm_stops_both(
    root: Path, server: Server
) -> None:
    answers = [server.get("/pool") for _ in range(3)]
    expected = {"pool_status": "running", "worker_count": 2, "ready_worker_count": 2}
    assert answers == [(200, {**expected, "health": "worker-pool-healthy"})] * 3
    # The pool is the server's: its guardian (and proc host) and both workers are
    # uvicorn's descendants, and the control channel answers as for any pool.
    pool = server.descendants()
    workers = [
        p for p in pool if "coretsia.supervisor.worker_side.launcher" in " ".join(p.cmdline())
    ]
    assert len(workers) == 2
    status = json.loads(pools.cli(root, "status", "--json").stdout)
    assert status["pid"] == server.proc.pid
    assert (status["worker_count"], status["ready_worker_count"]) == (2, 2)

    server.proc.send_signal(signal.SIGTERM)
    out, err = server.proc.communicate(timeout=WAIT)
    # uvicorn re-raises the signal it caught once its graceful shutdown is over.
    assert server.proc.returncode == -signal.SIGTERM, err
    # uvicorn returned from its lifespan only once the pool was down: nothing is left,
    # not even a zombie, and every entry saw the cooperative stop.
    assert [p.pid for p in pool if psutil.pid_exists(p.pid)] == []
    stops = sorted(pools.events(root, "steady-stop"))
    assert stops == [["steady-stop", "0", "True"], ["steady-stop", "1", "True"]]
    assert not pools.lock_held(root)
    assert '"event":"pool.stopped","level":"info","outcome":"clean"' in err
    assert out == ""  # stdout is the host's: a mounted pool prints no summary there


def test_a_host_that_ends_inside_the_block_neither_hangs_nor_leaks(root: Path) -> None:
    """The pool's thread does not keep a finished host alive (it is a daemon thread), and
    the host's end is the supervisor's: the guardian then stops and reaps every worker."""
    pools.install_app(root, "mounted_app.py")
    host = subprocess.Popen(
        [sys.executable, "mounted_app.py"],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = host.communicate(timeout=WAIT)
    finally:
        if host.poll() is None:
            host.kill()
            host.communicate(timeout=WAIT)
    pids = [int(word) for word in out.split()]
    assert len(pids) >= 3, err  # the guardian and both workers at least
    # Orphaned, they are reaped by whoever adopts them (not us): gone or a zombie.
    assert pools.wait_gone(root, WAIT) == []
    assert [pid for pid in pids if _alive(pid)] == []
    assert sorted(pools.events(root, "steady")) == [["steady", "0"], ["steady", "1"]]
    assert not pools.lock_held(root)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
