"""The msgqueue and pipe IPC scenarios (``python app.py <ipc> <workers> <scenario>...``)."""

import json
import os
import select
import subprocess
import sys
import time

from coretsia.supervisor import ProcessManager
from coretsia.supervisor.process import (
    IpcUnavailableError,
    MessageTooLargeError,
    PeerUnavailableError,
    ProcessArgumentError,
)


def report(**fields):
    with open("result.json", "w") as out:
        json.dump(fields, out)


def send(pool, worker_id, data):
    """Retry while the receiver has no endpoint yet (unixsock: starting, replaced)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return pool.send_message(worker_id, data)
        except PeerUnavailableError:
            if time.monotonic() > deadline:
                raise
            pool.wait_for_stop(0.01)


def ipc_targets(pool):
    """What this worker's IPC descriptors point at (socket:[n], pipe:[n])."""
    endpoint = pool._endpoint
    fds = [endpoint.wait_fd()] + ([endpoint._write] if hasattr(endpoint, "_write") else [])
    return sorted(os.readlink(f"/proc/self/fd/{fd}") for fd in fds)


CHILD = """
import os
for name in os.listdir("/proc/self/fd"):
    try:
        print(os.readlink("/proc/self/fd/" + name))
    except OSError:
        pass
"""


def pinger(pool, worker_id):
    seen = {"ipc_type": pool.ipc_type, "replies": []}
    try:
        for payload in (b"one", b"x" * 8192):
            send(pool, 1, payload)
            reply = pool.receive_message(timeout=20).decode()
            seen["replies"].append(reply)
            # Its worker returns after answering: wait for it to end, or a datagram sent
            # to its socket in the meantime dies with it (unixsock's documented loss).
            try:
                select.select([os.pidfd_open(int(reply.split(":")[0]))], [], [], 20)
            except ProcessLookupError:
                pass  # already gone
        seen["empty"] = pool.receive_message(timeout=0.05)
        for bad in ((1, b"x" * 8193, MessageTooLargeError), (2, b"", ProcessArgumentError)):
            try:
                pool.send_message(bad[0], bad[1])
            except bad[2]:
                seen.setdefault("refused", []).append(bad[2].__name__)
        seen["ours"] = ipc_targets(pool)
        child = subprocess.run(
            [sys.executable, "-c", CHILD], close_fds=False, capture_output=True, text=True
        )
        seen["child"] = child.stdout.split()
        if pool.ipc_type == "unixsock":
            seen["dir_mode"] = oct(os.stat("var/tmp/worker.ipc").st_mode & 0o777)
        else:
            seen["queue_mode"] = oct(pool._endpoint._queue.mode & 0o777)
    except BaseException as error:
        seen["error"] = repr(error)
    finally:
        report(**seen)
        pool.shutdown()
    pool.wait_for_stop(30)


def ponger(pool, worker_id):
    """Answers one message, then returns: the pool replaces it for the next one."""
    message = pool.receive_message()
    if message is not None:
        pool.send_message(0, b"%d:%d" % (os.getpid(), len(message)))


async def ponger_async(pool, worker_id):
    message = await pool.receive_message_async()
    if message is not None:
        pool.send_message(0, b"%d:%d" % (os.getpid(), len(message)))


def without_ipc(pool, worker_id):
    seen = {"ipc_type": pool.ipc_type}
    try:
        pool.receive_message(timeout=0)
    except IpcUnavailableError as error:
        seen["refused"] = type(error).__name__
    seen["loaded"] = sorted(
        name
        for name in ("sysv_ipc", "coretsia.supervisor.worker_side.entry_ipc")
        if name in sys.modules
    )
    report(**seen)
    pool.shutdown()
    pool.wait_for_stop(30)


def idle(pool, worker_id):
    while pool.receive_message() is not None:
        pass


def deaf(pool, worker_id):
    """Never reads its messages: its buffer (socket or queue) fills up."""
    pool.wait_for_stop(None)


def flooder(pool, worker_id):
    """Fills worker 0's buffer, then blocks in a send until the pool stops."""
    from coretsia.supervisor.process import MessageBufferFullError

    sent = 0
    try:
        while True:
            pool.send_message(0, b"x" * 4096, block=False)
            sent += 1
    except MessageBufferFullError:
        pass
    with open("flooder.log", "w") as log:
        log.write(f"full after {sent}\n")
    try:
        pool.send_message(0, b"y")  # blocks: nobody makes room
    except PeerUnavailableError as error:
        report(blocked_send_ended=type(error).__name__, stopping=pool.stopping)
    pool.wait_for_stop(30)


def quit_at_once(pool, worker_id):
    pool.shutdown()
    pool.wait_for_stop(30)


if __name__ == "__main__":
    ipc_type, key, *entries = sys.argv[1:]
    manager = ProcessManager(ipc_type=ipc_type, msg_queue_key=int(key))
    for name in entries:
        manager.add(globals()[name], name=name)
    try:
        manager.start()
    except Exception as error:
        print(
            "failed:",
            type(error).__name__,
            getattr(error, "key", ""),
            getattr(getattr(error, "rule", None), "value", ""),
        )
        sys.exit(1)
