"""A script with a ProcessManager pool per scenario, for tests/process (copied into a root).

Run as ``python process_app.py <scenario>`` with the project root as working directory.
Entries report what happened by appending lines to ``events.log`` (one ``os.write`` per
line, so concurrent workers never interleave); the script prints ``returned`` when
``start()`` returns, or ``raised <class> <str>`` when it raises. Every entry lives at
module level, so the workers re-import this script the way multiprocessing's spawn does
(the ``__main__`` guard at the bottom keeps them from starting pools of their own).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from coretsia.supervisor import ProcessManager
from coretsia.supervisor.process import ProcessDefinition, current_pool

EVENTS = "events.log"


def log(*words: object) -> None:
    line = " ".join(str(word) for word in words) + "\n"
    fd = os.open(EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def events(prefix: str = "") -> list[str]:
    try:
        with open(EVENTS) as stream:
            return [line.strip() for line in stream if line.startswith(prefix)]
    except FileNotFoundError:
        return []


# -- entries -------------------------------------------------------------------------


def steady(pool, worker_id):
    """Runs until the pool stops, as a long-running entry should."""
    log("steady-start", worker_id, pool.name, os.getpid())
    try:
        while not pool.wait_for_stop(5):
            pass
    finally:
        log("steady-stop", worker_id, pool.stopping)


def returner(pool, worker_id):
    """Returns at once: replaced again and again while the pool runs."""
    log("returner", worker_id, time.monotonic())


def raiser(pool, worker_id):
    """Raises at once: replaced just the same."""
    log("raiser", worker_id, time.monotonic())
    raise RuntimeError("entry failed")


def stop_after_returns(pool, worker_id):
    """Asks for the whole pool's shutdown once the returner ran four times."""
    log("stopper-start", worker_id)
    while len(events("returner") + events("raiser")) < 4:
        if pool.wait_for_stop(0.02):
            return
    pool.shutdown()
    pool.shutdown()  # a second request is one request
    pool.wait_for_stop(30)


def stop_through_manager(pool, worker_id):
    """``manager.stop()`` inside a worker: the worker's own manager object, re-created."""
    log("manager-stop", worker_id)
    MANAGER.stop()
    pool.wait_for_stop(30)


def stubborn(pool, worker_id):
    """Ignores the cooperative stop; SIGTERM must still run its finally block."""
    log("stubborn-start", worker_id)
    try:
        time.sleep(3600)
    finally:
        log("stubborn-finally", worker_id, type(sys.exc_info()[1]).__name__)


async def stubborn_asyncio(pool, worker_id):
    import asyncio

    log("stubborn-start", worker_id)
    try:
        await asyncio.sleep(3600)
    finally:
        log("stubborn-finally", worker_id, type(sys.exc_info()[1]).__name__)


async def stubborn_trio(pool, worker_id):
    import trio

    log("stubborn-start", worker_id)
    try:
        await trio.sleep(3600)
    finally:
        log("stubborn-finally", worker_id, type(sys.exc_info()[1]).__name__)


async def waits_asyncio(pool, worker_id):
    import asyncio

    log("async-start", worker_id, type(asyncio.get_running_loop()).__module__)
    await pool.wait_stopped()
    log("async-stop", worker_id)


async def waits_trio(pool, worker_id):
    import trio

    log("async-start", worker_id, trio.lowlevel.current_trio_token() is not None)
    await pool.wait_stopped()
    log("async-stop", worker_id)


async def two_waiters(pool, worker_id):
    """Two tasks of one async entry wait for the stop at once (asyncio or trio)."""
    import sniffio

    log("two-waiters-start", worker_id)
    if sniffio.current_async_library() == "trio":
        import trio

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pool.wait_stopped)
            nursery.start_soon(pool.wait_stopped)
    else:
        import asyncio

        await asyncio.gather(pool.wait_stopped(), pool.wait_stopped())
    log("two-waiters-done", worker_id)


def shutdown_when_waiting(pool, worker_id):
    while not events("two-waiters-start"):
        if pool.wait_for_stop(0.02):
            return
    pool.shutdown()
    pool.wait_for_stop(30)


def nested(pool, worker_id):
    """Starting a pool inside a managed worker is refused."""
    inner = ProcessManager().add(steady)
    try:
        inner.start()
    except Exception as exc:
        log("nested", type(exc).__name__)
    pool.shutdown()
    pool.wait_for_stop(30)


class Job:
    """A typed entry (the Process protocol): built in the parent and again in each worker."""

    enabled = True
    enable_async = False

    def __init__(self) -> None:
        log("job-built", os.getpid())

    def execute(self, pool, worker_id):
        log("job-execute", worker_id, pool.worker_id, pool.name)
        pool.wait_for_stop(30)


class BrokenInWorkers(Job):
    """Builds in the parent, fails to build in every worker (a boot failure)."""

    def __init__(self) -> None:
        if not PARENT:
            raise RuntimeError("cannot build here")


PARENT = False  # set by the main guard only: a worker's re-import leaves it False

# -- scenarios (the parent) -----------------------------------------------------------

MANAGER = ProcessManager()


def scenario(name: str) -> None:
    pm = MANAGER
    if name == "run":
        pm.add(steady, name="steady").add_batch(1, returner).add(stop_after_returns)
    elif name == "raise":
        pm.add(raiser, name="raiser").add(stop_after_returns, name="stopper")
    elif name == "batch":
        pm.add_batch(2, steady, name="web").add(Job()).add(stop_through_manager)
    elif name == "manager-stop":
        pm.add(steady).add(stop_through_manager)
    elif name == "thread-stop":
        pm.add(steady)

        def stop_when_started() -> None:
            deadline = time.monotonic() + 30
            while not events("steady-start") and time.monotonic() < deadline:
                time.sleep(0.01)
            pm.stop()

        threading.Thread(target=stop_when_started, daemon=True).start()
    elif name == "serve":
        pm.add_batch(2, steady, name="steady")
    elif name == "own-child":
        # The application's own child, started before the pool: not the pool's to kill.
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            stdout=subprocess.DEVNULL,  # not the script's pipes: the test reads them to EOF
            stderr=subprocess.DEVNULL,
        )
        print("before own child", child.pid, flush=True)
        pm.add(steady)
    elif name == "stubborn":
        pm.add(stubborn).add(stubborn_asyncio, enable_async=True)
    elif name == "stubborn-trio":
        pm.add(stubborn_trio, enable_async=True)
    elif name == "async":
        pm.add(waits_asyncio, enable_async=True).add(ProcessDefinition(stop_after_returns))
        pm.add(returner)
    elif name == "nested":
        pm.add(nested)
    elif name == "two-waiters":
        pm.add(two_waiters, enable_async=True).add(shutdown_when_waiting)
    elif name == "early-stop":
        pm.add(steady)

        def stop_once_published() -> None:
            deadline = time.monotonic() + 30
            while not os.path.exists("var/generations/current"):  # no event announces it
                if time.monotonic() > deadline:
                    return
                time.sleep(0.001)
            pm.stop()

        threading.Thread(target=stop_once_published, daemon=True).start()
    elif name == "trio":
        pm.add(waits_trio, enable_async=True)
    elif name == "boot-fails":
        pm.add(BrokenInWorkers())
    elif name == "intensity":
        pm.add(returner).add(steady)
    elif name == "empty":
        pass
    elif name == "cancelled":
        pm.add(steady).stop()
    elif name == "thread":
        pm.add(steady)
        errors: list[BaseException] = []
        thread = threading.Thread(target=lambda: _capture(pm.start, errors))
        thread.start()
        thread.join(30)
        raise errors[0]
    elif name == "in-asyncio":
        import asyncio

        async def inside() -> None:
            pm.start()

        pm.add(steady)
        asyncio.run(inside())
    elif name == "in-trio":
        import trio

        async def inside_trio() -> None:
            pm.start()

        pm.add(steady)
        trio.run(inside_trio)
    elif name in ("forked", "forked-mounted"):
        pm.add(steady)
        pid = os.fork()
        if pid == 0:
            try:
                if name == "forked":
                    pm.start()
                else:
                    import asyncio

                    asyncio.run(_mount(pm))
            except Exception as exc:
                print("child raised", type(exc).__name__, exc, flush=True)
                os._exit(0)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        pm.stop()  # the parent's registry is untouched by the child's attempt: cancel it
    else:
        raise SystemExit(f"unknown scenario {name}")
    pm.start()


async def _mount(pm: ProcessManager) -> None:
    async with pm.running():
        print("mounted", flush=True)


def _process_state() -> str:
    """What start() must put back: the coretsia logger's handlers, subreaper, umask."""
    import ctypes
    import logging

    flag = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    umask = os.umask(0o022)
    os.umask(umask)
    handlers = len(logging.getLogger("coretsia").handlers)
    return f"state handlers={handlers} subreaper={flag.value} umask={umask:03o}"


def _capture(call, errors) -> None:
    try:
        call()
    except BaseException as exc:
        errors.append(exc)


if __name__ == "__main__":
    PARENT = True
    assert current_pool() is None
    os.umask(0o022)
    if os.environ.get("APP_SUBREAPER") == "1":  # an application that is a subreaper itself
        from coretsia.worker_protocol.internal.runtime.subreaper import become_subreaper

        become_subreaper()
    print("before", _process_state(), flush=True)
    try:
        scenario(sys.argv[1])
    except Exception as exc:
        print("raised", type(exc).__name__, exc, flush=True)
    else:
        print("after", _process_state(), flush=True)
        print("returned", flush=True)
    if sys.argv[1] == "own-child":
        import psutil

        # What the pool left among the application's children: nothing but its own child,
        # not even a zombie (this process lives on after start(), as an application does).
        statuses = sorted(child.status() for child in psutil.Process().children())
        print("children", *statuses, flush=True)
    if sys.argv[1] in ("empty", "cancelled"):
        try:
            MANAGER.add(steady)
        except Exception as exc:
            print("then", type(exc).__name__, flush=True)
