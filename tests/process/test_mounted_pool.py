"""``ProcessManager.running()`` in this test's own asyncio or trio loop: real pools.

The pool's supervisor runs in a thread of the test process; its guardian and workers are
the test's descendants, so every pid the pool had is known while it runs, and each test
checks all of them are gone (reaped, not merely signalled) when the block has returned.
Waits are the block's own events (bounded by ``fail_after``/``wait_for``) and the pool's
end; the conftest fails any test that leaves a process.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
from pathlib import Path

import pools
import psutil
import pytest
import trio
from apps import mounted_app

from coretsia.supervisor import ProcessManager
from coretsia.supervisor.process import (
    HostLoopUnsupportedError,
    MountedPool,
    NestedPoolError,
    PoolAlreadyRunningError,
    RegistrationClosedError,
)
from coretsia.worker_protocol.control import PoolSummary
from coretsia.worker_protocol.exceptions import (
    WorkerLifecycleFailedError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.vocabulary import PoolStatus

WAIT = 60.0


@pytest.fixture
def root(root: Path) -> Path:
    """A root whose ``[worker]`` table gives the pool short budgets (the rest is ignored)."""
    pools.write_root(root, workers=1, stop_timeout_ms=3000)
    return root


def pool_pids() -> set[int]:
    """The test process's descendants now: the mounted pool's guardian and workers."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def assert_reaped(pids: set[int]) -> None:
    """Every pid is gone: no process, not even a zombie waiting for its parent."""
    assert pids
    assert [pid for pid in pids if psutil.pid_exists(pid)] == []


def steady_pool(root: Path, workers: int = 2) -> ProcessManager:
    return ProcessManager(root=root).add_batch(workers, mounted_app.steady, name="steady")


def assert_stopped_cooperatively(root: Path, workers: int = 2) -> None:
    stops = sorted(pools.events(root, "steady-stop"))
    assert stops == [["steady-stop", str(i), "True"] for i in range(workers)]
    assert not pools.lock_held(root)


# -- asyncio ----------------------------------------------------------------------------


def test_an_asyncio_host_runs_the_pool_and_reaps_it_on_exit(root: Path) -> None:
    """Entered once every slot is ready, the loop free meanwhile; exit reaps everything."""

    async def host() -> tuple[int, PoolSummary | None, set[int]]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        beating = asyncio.create_task(ticker())
        async with steady_pool(root).running() as pool:
            ticks_at_start = ticks
            summary = pool.summary()
            pids = pool_pids()
        beating.cancel()
        return ticks_at_start, summary, pids

    ticks, summary, pids = asyncio.run(asyncio.wait_for(host(), WAIT))
    # The start takes hundreds of milliseconds (interpreters boot): a loop blocked by it
    # would not have ticked at all before the block was entered.
    assert ticks >= 10
    assert summary is not None
    assert summary.pool_status is PoolStatus.RUNNING
    assert (summary.worker_count, summary.ready_worker_count) == (2, 2)
    assert len(pids) >= 3  # the guardian and both workers at least
    assert_reaped(pids)
    assert_stopped_cooperatively(root)


def test_an_asyncio_cancel_stops_the_pool_and_is_passed_on(root: Path) -> None:
    """The host's stop as a cancellation (repeated: asyncio delivers each one once): the
    block still waits for the reaping, then passes the cancel on."""
    seen: set[int] = set()

    async def mounted(entered: asyncio.Event) -> None:
        async with steady_pool(root).running():
            seen.update(pool_pids())
            entered.set()
            await asyncio.sleep(WAIT)  # cancelled by the host below

    async def host() -> bool:
        entered = asyncio.Event()
        task = asyncio.create_task(mounted(entered))
        await entered.wait()
        while not task.done():  # cancelled again and again, the exit still reaps first
            task.cancel()
            await asyncio.sleep(0)
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(asyncio.wait_for(host(), WAIT)) is True
    assert_reaped(seen)
    assert_stopped_cooperatively(root)


# -- trio -------------------------------------------------------------------------------


async def test_a_trio_host_runs_the_pool_and_a_cancel_stops_it(root: Path) -> None:
    with trio.fail_after(WAIT), trio.CancelScope() as scope:
        async with steady_pool(root).running() as pool:
            summary = pool.summary()
            health = pool.health()
            pids = pool_pids()
            scope.cancel()  # the host's stop
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert summary is not None
    assert (summary.pool_status, summary.ready_worker_count) == (PoolStatus.RUNNING, 2)
    assert health is not None
    assert health.healthy
    assert_reaped(pids)
    assert_stopped_cooperatively(root)


async def test_a_host_that_gives_up_during_the_start_gets_nothing_left(root: Path) -> None:
    """Cancelled before the pool is ready: the start is stopped and reaped, then the
    cancel goes on; the block never runs."""
    with trio.fail_after(WAIT), trio.CancelScope() as scope:
        scope.cancel()  # strikes at the first wait for readiness
        async with steady_pool(root).running():
            pytest.fail("entered a pool whose start was cancelled")
    assert scope.cancelled_caught
    assert pool_pids() == set()
    assert (root / "var").exists()  # the pool had begun, and was let go
    assert not pools.lock_held(root)
    # Its claim on the process is free again: another pool mounts at once.
    with trio.fail_after(WAIT):
        async with steady_pool(root, workers=1).running() as pool:
            assert pool.summary() is not None


async def test_a_pool_stopped_from_outside_wakes_the_host(root: Path) -> None:
    """``wait()`` returns when the pool ended without the host (here the operator's
    ``coretsia-supervisor stop``, which works as for any pool): everything is reaped by
    then, inside the block; the block then exits cleanly."""
    with trio.fail_after(WAIT):
        async with steady_pool(root).running() as pool:
            pids = pool_pids()
            stop = subprocess.Popen(
                [*pools.SUPERVISOR, "stop", "--root", str(root)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            await pool.wait()
            assert_reaped(pids)
            summary = pool.summary()
        assert await trio.to_thread.run_sync(stop.wait, WAIT) == 0
    assert summary is not None
    assert summary.pool_status is PoolStatus.STOPPING
    assert_stopped_cooperatively(root)


async def test_a_failed_start_is_raised_once_the_pool_is_down(root: Path) -> None:
    """The block is never entered; the failure comes after the shutdown, lock released."""
    manager = steady_pool(root, workers=1).add(mounted_app.Unbootable())
    with trio.fail_after(WAIT), pytest.raises(WorkerStartFailedError) as failed:
        async with manager.running():
            pytest.fail("entered a pool that did not start")
    assert str(failed.value) == "CORETSIA_WORKER_START_FAILED: worker-child-start-failed"
    assert pool_pids() == set()
    assert not pools.lock_held(root)


async def test_a_pool_that_fails_while_mounted_raises_at_the_exit(root: Path) -> None:
    """Entered, then failed (restart intensity): ``wait()`` returns and the exit raises."""
    pools.write_root(root, workers=1, restart_intensity=2, restart_period_ms=60000)
    fifo = root / "go.fifo"
    os.mkfifo(fifo, 0o600)
    entered: list[PoolSummary | None] = []

    async def host() -> None:
        async with ProcessManager(root=root).add(mounted_app.gated).running() as pool:
            entered.append(pool.summary())
            # Blocks until the entry opens its end: the entry returns from then on.
            fd = await trio.to_thread.run_sync(os.open, fifo, os.O_WRONLY, abandon_on_cancel=True)
            try:
                await pool.wait()
            finally:
                os.close(fd)

    with trio.fail_after(WAIT), pytest.raises(WorkerLifecycleFailedError) as failed:
        await host()
    (summary,) = entered
    assert summary is not None
    assert summary.pool_status is PoolStatus.RUNNING
    assert str(failed.value) == (
        "CORETSIA_WORKER_LIFECYCLE_FAILED: worker-restart-intensity-exceeded"
    )
    assert pool_pids() == set()
    assert not pools.lock_held(root)


# -- guards -----------------------------------------------------------------------------


async def test_one_pool_per_process(root: Path, short_roots) -> None:
    other = short_roots()
    pools.write_root(other, workers=1)
    second = steady_pool(other, workers=1)
    with trio.fail_after(WAIT):
        async with steady_pool(root).running():
            with pytest.raises(PoolAlreadyRunningError) as refused:
                await second.running().__aenter__()
    assert refused.value.code == "process-pool-already-running"
    assert not (other / "var").exists()  # nothing of the second pool was started
    # A refused claim left the manager able to run once the first pool is gone.
    with trio.fail_after(WAIT):
        async with second.running() as pool:
            summary = pool.summary()
    assert summary is not None
    assert summary.worker_count == 1


def test_the_blocking_start_counts_a_mounted_pool(root: Path, short_roots) -> None:
    """A pool mounted in another thread's loop refuses ``start()`` in the main thread."""
    other = short_roots()
    pools.write_root(other, workers=1)
    entered, leave = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    async def mounted() -> None:
        async with steady_pool(root, workers=1).running():
            entered.set()
            await asyncio.to_thread(leave.wait, WAIT)

    def host() -> None:
        try:
            asyncio.run(mounted())
        except BaseException as exc:
            failures.append(exc)
            entered.set()

    thread = threading.Thread(target=host)
    thread.start()
    try:
        assert entered.wait(WAIT)
        assert failures == []
        with pytest.raises(PoolAlreadyRunningError):
            steady_pool(other, workers=1).start()
    finally:
        leave.set()
        thread.join(WAIT)
    assert not thread.is_alive()
    assert failures == []
    assert not (other / "var").exists()


async def test_a_manager_mounts_its_pool_once(root: Path) -> None:
    manager = steady_pool(root, workers=1)
    with trio.fail_after(WAIT):
        async with manager.running():
            pass
        with pytest.raises(RegistrationClosedError) as refused:
            await manager.running().__aenter__()
    assert refused.value.code == "process-registration-closed"


def test_a_mounted_pool_needs_an_asyncio_or_trio_loop(root: Path) -> None:
    """Driven by hand (no event loop), the block is refused before anything starts."""
    manager = steady_pool(root)
    entering = manager.running().__aenter__()
    with pytest.raises(HostLoopUnsupportedError) as refused:
        entering.send(None)
    assert refused.value.code == "process-host-loop-unsupported"
    assert manager.closed  # the attempt closed the registration, as start() does
    assert not (root / "var").exists()


async def test_a_managed_worker_cannot_mount_a_pool(root: Path) -> None:
    """The ``nester`` entry tries, logs the refusal's code and ends the pool."""
    with trio.fail_after(WAIT):
        async with ProcessManager(root=root).add(mounted_app.nester).running() as pool:
            await pool.wait()
    assert pools.events(root, "nested") == [["nested", NestedPoolError.code]]


async def test_an_empty_or_stopped_registry_mounts_nothing(root: Path) -> None:
    stopped = steady_pool(root).stop()
    for manager in (ProcessManager(root=root), stopped):
        with trio.fail_after(WAIT):
            async with manager.running() as pool:
                assert isinstance(pool, MountedPool)
                assert pool.summary() is None
                await pool.wait()  # returns at once
    assert not (root / "var").exists()


def test_a_mounted_pool_leaves_the_service_manager_to_its_host(
    root: Path, short_roots, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``NOTIFY_SOCKET`` set, a mounted pool sends nothing: the host is the service."""
    address = str(short_roots() / "notify")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(address)
    listener.settimeout(0)  # non-blocking: recv raises at once if nothing came
    monkeypatch.setenv("NOTIFY_SOCKET", address)

    async def host() -> None:
        async with steady_pool(root).running():
            pass

    try:
        asyncio.run(asyncio.wait_for(host(), WAIT))
        with pytest.raises(BlockingIOError):
            listener.recv(4096)
    finally:
        listener.close()
    assert_stopped_cooperatively(root)
