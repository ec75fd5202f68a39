"""The floor: what starting, readying and stopping N plain interpreters costs here.

A bare Python script with nothing of Coretsia in it. ``bench/run.py`` compares every pool
scenario with this floor, measured in the same run on the same machine.

``floor.py pool N``
    ``subprocess.Popen`` N minimal workers (an interpreter that sends one readiness
    datagram to a socket this script bound, then sleeps), wait for N datagrams, print
    ``running`` on stdout; then wait for a line on stdin, SIGTERM every worker, reap
    them all and exit. The caller times launch-to-``running`` (the floor of S1) and
    stdin-line-to-exit (the floor of S2).

``floor.py serve N ADDRESS``
    The floor of the peers' benchmark (``bench/peers.py``): ``Popen`` N minimal workers
    that report to ``ADDRESS`` (a datagram socket the caller bound), then wait for
    SIGTERM, SIGTERM every worker, reap them all and exit. The caller watches the workers'
    datagrams itself, as it does for every peer.

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
    "import socket, sys, time; "
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
    "s.sendto(b'ready', sys.argv[1]); "
    "time.sleep(3600)"
)
"""The minimal worker: an interpreter that reports ready once and sleeps.

One line, so the peers' configuration files (supervisord's ``command``, circus's ``args``,
a Procfile) can carry it unchanged.
"""


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


def serve(n: int, address: str) -> None:
    # A handler, not a blocked mask: the workers would inherit the mask, and SIGTERM.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        workers.extend(_spawn(address) for _ in range(n))
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        _stop(workers)


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
    elif mode == "serve":
        serve(count, sys.argv[3])
    else:
        spawn(count)
