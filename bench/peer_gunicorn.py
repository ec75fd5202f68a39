"""gunicorn's side of the peers' benchmark: its configuration and a WSGI application.

``bench/peers.py`` copies this file into gunicorn's project root and runs
``gunicorn -c peer_gunicorn.py peer_gunicorn:app``. gunicorn has no way to run a fresh
interpreter per worker (its workers are forks of the arbiter), so its worker is the
forked one, which reports ready from ``post_worker_init`` exactly as every other side's
worker does (one datagram to ``ready.sock``) and then idles in the sync worker's loop.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from typing import Any


def post_worker_init(worker: Any) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"ready", "ready.sock")


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("204 No Content", [])
    return []
