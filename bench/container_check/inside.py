"""What runs in a container and on the host: the pool's processes, seen from both sides.

Inside, through ``docker exec`` (the images have no ``ps``: a few lines of Python read
``/proc``). On the host, by a marker: every container of the check is started with
``CORETSIA_CONTAINER_CHECK=<token>`` in its environment, which every process of the pool
inherits (the init, the supervisor, the guardian, the workers), so a process carrying it
after the container ended is a leftover of that container, whatever namespace it is in and
whatever else of this project runs on the machine.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass

import psutil

from container_check.docker import Docker
from container_check.errors import CheckFailed

MARK = "CORETSIA_CONTAINER_CHECK"
_LIST = """
import json, os
seen = []
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        with open(f"/proc/{name}/stat") as stat:
            ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{name}/cmdline", "rb") as cmdline:
            words = cmdline.read().split(b"\\0")
    except OSError:
        continue
    seen.append([int(name), ppid, [w.decode("utf-8", "replace") for w in words if w]])
print(json.dumps(seen))
"""


@dataclass(frozen=True)
class Inside:
    """A process as the container sees it."""

    pid: int
    ppid: int
    argv: tuple[str, ...]

    def runs(self, text: str) -> bool:
        """True if ``text`` is part of its command line (its argv joined by spaces)."""
        return text in " ".join(self.argv)


def processes_inside(docker: Docker, container: str) -> list[Inside]:
    """Every process of ``container`` but the lister itself."""
    done = docker.run(
        ("docker", "exec", container, "python3", "-c", _LIST), timeout=60, token="list-inside"
    )
    return [Inside(pid, ppid, tuple(argv)) for pid, ppid, argv in json.loads(done.stdout)]


def carrying(token: str) -> list[psutil.Process]:
    """Every live process of this machine whose environment carries the check's marker."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARK) == token and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def left_after(token: str, snapshot: list[psutil.Process], timeout: float) -> int:
    """How many processes still carry the marker once ``snapshot`` ended (bounded wait)."""
    psutil.wait_procs(snapshot, timeout=timeout)
    return len(carrying(token))


def wait_running(docker: Docker, container: str, workers: int, timeout: float) -> None:
    """Follow the container's output until the pool says every worker is ready.

    ``start`` prints ``running: N/N workers ready ...`` on stdout once every slot sent its
    readiness frame (the JSON log lines go to stderr): that line is the event waited on.
    ``docker logs --follow`` may end while the container still runs (moby/moby#38324,
    #37894): then it is followed again, from the start; only a container that is no longer
    running ends the wait before the line.
    """
    deadline = time.monotonic() + timeout
    expected = f"running: {workers}/{workers} workers ready".encode()
    while not _follow_until(docker, container, expected, deadline):
        running = docker.inspect(container, "{{.State.Running}}")
        if running != "true":
            raise CheckFailed("pool-ended-before-ready")


def _follow_until(docker: Docker, container: str, expected: bytes, deadline: float) -> bool:
    """True once a line starts with ``expected``; False if the output ended first."""
    follower = subprocess.Popen(
        docker.argv(("docker", "logs", "--follow", container)),
        env=docker.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert follower.stdout is not None
    fd = follower.stdout.fileno()
    pending = b""
    try:
        while not any(line.startswith(expected) for line in pending.split(b"\n")):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CheckFailed("pool-not-ready")
            if select.select([fd], [], [], remaining)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return False
                pending += chunk
        return True
    finally:
        follower.terminate()
        follower.wait(timeout=30)
        follower.stdout.close()
