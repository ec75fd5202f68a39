"""A host application with a mounted pool (``ProcessManager.running``), and its entries.

``app`` is a plain ASGI application (no framework): its lifespan runs the pool for the
server's whole life, and ``GET /pool`` answers the pool's status as JSON. The tests run
it under a real uvicorn (``mounted_app:app`` in a root), and import the entries below
for the pools they mount in their own asyncio or trio loop. Entries log a line of words
to ``events.log`` in the root (a worker's working directory).
"""

import json
import os

from coretsia.supervisor import ProcessManager
from coretsia.supervisor.process import ProcessError


def log(*words):
    fd = os.open("events.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, (" ".join(str(w) for w in words) + "\n").encode())
    os.close(fd)


def steady(pool, worker_id):
    log("steady", worker_id)
    log("steady-stop", worker_id, pool.wait_for_stop(None))


def gated(pool, worker_id):
    # Returns, to be replaced, once someone opened ``go.fifo`` for writing; while the
    # writer keeps it open, every replacement returns at once.
    with open("go.fifo", "rb"):
        pass


async def nester(pool, worker_id):
    # A managed worker may not mount a pool of its own; it reports the refusal's code,
    # then ends the pool it belongs to.
    try:
        async with ProcessManager().add(steady).running():
            log("nested", "mounted")
    except ProcessError as exc:
        log("nested", exc.code)
    pool.shutdown()
    await pool.wait_stopped()


MANAGER = ProcessManager().add_batch(2, steady, name="steady")
_MOUNTED: dict = {}


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["type"] == "http":
        await _answer(send)


async def _lifespan(receive, send):
    await receive()  # lifespan.startup
    async with MANAGER.running() as pool:
        _MOUNTED["pool"] = pool
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown: the server got its SIGTERM
    await send({"type": "lifespan.shutdown.complete"})


async def _answer(send):
    pool = _MOUNTED["pool"]
    summary = pool.summary()
    body = json.dumps(
        {
            "pool_status": summary.pool_status.value,
            "worker_count": summary.worker_count,
            "ready_worker_count": summary.ready_worker_count,
            "health": pool.health().reason.value,
        }
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Unbootable:
    """An entry built in the parent but not in a worker (its generation's mark is there)."""

    enabled = True
    enable_async = False

    def __init__(self):
        if "CORETSIA_WORKER_TREE" in os.environ:
            raise RuntimeError("this entry cannot start in a worker")

    def execute(self, pool, worker_id):
        pool.wait_for_stop(None)


if __name__ == "__main__":
    # A host that ends without leaving the block (it never exits the context manager):
    # it prints its descendants' pids (the pool's), then ends its main thread.
    import asyncio

    import psutil

    async def enter_only():
        await MANAGER.running().__aenter__()

    asyncio.new_event_loop().run_until_complete(enter_only())
    print(*[p.pid for p in psutil.Process().children(recursive=True)], flush=True)
