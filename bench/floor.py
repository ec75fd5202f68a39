"""The floor: what starting, readying and stopping N plain interpreters costs here.

A bare Python script with nothing of Coretsia in it. ``bench/run.py`` compares every pool
scenario with this floor, measured in the same run on the same machine.

``floor.py pool N``
    ``subprocess.Popen`` N minimal workers (an interpreter that sends one readiness
    datagram to a socket this script bound, then sleeps), wait for N datagrams, print
    ``running`` on stdout; then wait for a line on stdin, SIGTERM every worker, reap
    them all and exit. The caller times launch-to-``running`` (the floor of S1) and
    stdin-line-to-exit (the floor of S2).

``floor.py spawn K``
    K times: ``Popen`` one minimal worker and wait for its datagram (the floor of one
    spawn-to-ready, for S3), then SIGTERM and reap it. Prints one JSON object: the K
    times in seconds (``ready``) and the workers' mean CPU seconds (``cpu``).

Standard library only.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time

MINIMAL_WORKER = (
    "import socket, sys, time\n"
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
    "s.sendto(b'ready', sys.argv[1])\n"
    "time.sleep(3600)\n"
)
"""The minimal worker: an interpreter that reports ready once and sleeps."""


def _spawn(address: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", MINIMAL_WORKER, address],
        stdin=subprocess.DEVNULL,
    )


def _stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        try:
            worker.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    for worker in workers:
        worker.wait()


def _listener(directory: str) -> tuple[socket.socket, str]:
    address = os.path.join(directory, "ready.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(address)
    return listener, address


def pool(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="cw-floor-") as directory:
        listener, address = _listener(directory)
        workers: list[subprocess.Popen[bytes]] = []
        try:
            workers.extend(_spawn(address) for _ in range(n))
            for _ in range(n):
                listener.recv(16)
            sys.stdout.write("running\n")
            sys.stdout.flush()
            sys.stdin.readline()
        finally:
            _stop(workers)
            listener.close()


def spawn(k: int) -> None:
    times: list[float] = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="cw-floor-") as directory:
        listener, address = _listener(directory)
        try:
            for _ in range(k):
                started = time.monotonic()
                worker = _spawn(address)
                try:
                    listener.recv(16)
                    times.append(time.monotonic() - started)
                finally:
                    _stop([worker])
        finally:
            listener.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / k
    print(json.dumps({"ready": times, "cpu": cpu}))


if __name__ == "__main__":
    mode, count = sys.argv[1], int(sys.argv[2])
    if mode == "pool":
        pool(count)
    else:
        spawn(count)
