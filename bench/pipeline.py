"""The task pipeline's throughput and soak, side by side with Huey, in one run.

Run it with ``.venv/bin/nox -s bench_queue`` (which also installs the ``bench`` dependency
group: Huey), or ``python bench/pipeline.py`` in an environment that has it. Everything is
real: ``coretsia-supervisor start --root R --log-format json`` with the ``sqlite`` task
source, and ``huey_consumer hueyapp.huey -k process -w N`` with ``SqliteHuey``, each in a
throw-away root ``/tmp/cq-*``. The handlers (``pipeline_app.py``, ``pipeline_huey_app.py``)
record ``<payload> <pid> <start> <end>`` themselves (``time.monotonic``, one ``O_APPEND``
write per task); every figure is computed from those records, the queue's ``stats()`` and
the supervisor's JSON log. Results: a markdown table on stdout and
``bench/results/queue-<timestamp>.{json,md}``; explained in ``docs/performance.md``.

Parts (``--only``, comma-separated; default ``throughput,io``; ``--soak`` adds
``soak,two-pools``):

* ``throughput``: ``--tasks`` (5,000) no-op tasks enqueued before the consumer starts,
  for N = ``--sizes`` (1, 2, 4) workers, ``--runs`` times (3), Coretsia and Huey
  interleaved (which side goes first alternates from run to run): tasks/s (first task
  start to last task end), launch to first task start, tasks per worker process (padded
  with zeros to N: a worker that never got a task counts) and their coefficient of
  variation (population standard deviation over the mean), over the whole drain and over
  the records from the moment every worker had taken a task (boot stagger excluded).
* ``io``: 200 tasks that sleep 50 ms on 4 workers, both sides: the fraction of ideal
  parallel throughput (ideal = 200 x 50 ms / 4 = 2.5 s over the measured window).
* ``soak``: ``--soak-tasks`` (20,000) no-op tasks through 4 workers with
  ``max_requests = 50`` (recycling); a quarter in, the worker running the one marked task
  (it sleeps, holding its lease) is SIGKILLed, so the kill lands mid-task by construction;
  the pool fails by design (an unexpected worker exit) and is started again to finish.
  Checks: nothing lost (every payload's handler ran to its end, ``stats()`` says all
  ``done``), no handler ran to its end twice, the killed lease recovered once, no
  settlement refused (``task.failed``, ``worker-task-settlement-failed``), the per-process
  attempt maximum (<= max_requests + 1), the restarted pool's clean stop; reported:
  recycles and the spawn-to-ready times of recycled workers from the JSON log.
* ``two-pools``: two roots (2 workers each, ``max_requests = 25``, 10 ms tasks) on one
  database (an absolute ``database`` path) draining 2,000 messages together; counts the
  messages run by both pools, those run by both at overlapping times (must be 0), and
  how each pool ended.

Huey's ``PRAGMA synchronous`` is by default what Coretsia's workers use, read from them in
the warm-up; ``--huey-synchronous FULL`` (or ``NORMAL``) forces it.

Every wait is bounded (``DEADLINE_S``); every process started here is killed by pid (its
tree while it is not reaped, and whatever runs in its root) as soon as its part is over,
and again at the end whatever happens, on failure and on SIGINT or SIGTERM too (a second
signal waits until the cleanup is done).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness.bytecode
import harness.machine
import psutil
from harness.machine import load_average
from harness.processes import alive, descendants_named, processes_in
from harness.results import Results, median, save

from coretsia.sources.sqlite_queue import SqliteQueue

BENCH = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
SUPERVISOR = str(BIN / "coretsia-supervisor")
HUEY_CONSUMER = str(BIN / "huey_consumer")
LAUNCHER = "coretsia.supervisor.launcher"
DEADLINE_S = 300.0
"""Bound on any single wait (a whole drain included)."""
POLL_S = 0.05
IO_TASKS, IO_WORKERS, IO_SLEEP_S = 200, 4, 0.05
SOAK_TASKS, SOAK_WORKERS, SOAK_MAX_REQUESTS = 20_000, 4, 50
PAIR_TASKS, PAIR_WORKERS, PAIR_MAX_REQUESTS = 2_000, 2, 25
PARTS = ("throughput", "io", "soak", "two-pools")
SYNC = {"0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"}
"""``PRAGMA synchronous`` values by number (what a connection reports)."""


def log(message: str) -> None:
    print(f"[bench-queue {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- processes and roots ----------------------------------------------------------------


_ROOTS: list[Path] = []
"""Every throw-away root made here and not yet released."""
_STARTED: list[tuple[subprocess.Popen[bytes], Path]] = []
"""Every process started here and not yet reaped by ``kill``, with its root."""


def make_root(prefix: str = "cq-", *, app: bool = True) -> Path:
    """A short throw-away root (AF_UNIX paths must stay under about 100 bytes).

    Registered at once, so ``cleanup`` removes it whatever happens next; with ``app``, the
    handlers copied in as ``app.py`` and ``hueyapp.py`` and compiled.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    _ROOTS.append(root)
    try:
        if app:
            import py_compile

            shutil.copy(BENCH / "pipeline_app.py", root / "app.py")
            shutil.copy(BENCH / "pipeline_huey_app.py", root / "hueyapp.py")
            for name in ("app.py", "hueyapp.py"):
                py_compile.compile(str(root / name), doraise=True)
    except BaseException:
        release([root])
        raise
    return root


def spawn(argv: list[str], root: Path, out: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``root`` (its own session), stdout and stderr to ``out``."""
    with out.open("ab") as stream:
        proc = subprocess.Popen(
            argv,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=stream,
            start_new_session=True,
        )
    _STARTED.append((proc, root))
    return proc


def kill(proc: subprocess.Popen[bytes], root: Path) -> list[int]:
    """SIGKILL what is left of ``proc``'s tree and of ``root``; reap ``proc``; the pids.

    ``proc``'s own tree is walked only while ``proc`` is not reaped (``poll()`` is None):
    until then its pid cannot be reused, afterwards it may be anyone's. Whatever it left
    behind still runs in ``root`` (every process of a pool or consumer works there), and
    ``processes_in`` finds it. Once ``proc`` is reaped it is forgotten.
    """
    found = {p.pid: p for p in processes_in(root)}
    if proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            top = psutil.Process(proc.pid)
            for each in [top, *top.children(recursive=True)]:
                found.setdefault(each.pid, each)
    left = [p for p in found.values() if p.pid != os.getpid() and alive(p)]
    for each in left:
        with contextlib.suppress(psutil.Error):
            each.kill()
    # Not psutil.wait_procs: a worker whose guardian died with it stays a zombie until
    # init reaps it, and wait_procs waits for zombies to vanish; dead is enough here.
    deadline = time.monotonic() + 10
    while any(alive(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.01)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    if proc.returncode is not None and (proc, root) in _STARTED:
        _STARTED.remove((proc, root))
    return [p.pid for p in left]


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """SIGINT and SIGTERM held back meanwhile, delivered after: a second Ctrl-C (or TERM)
    must not cut a cleanup short."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def release(roots: list[Path]) -> None:
    """Kill every process started in ``roots`` and whatever else runs there; remove them."""
    with _uninterrupted():
        for proc, root in [entry for entry in _STARTED if entry[1] in roots]:
            killed = kill(proc, root)
            if killed:
                log(f"killed leftovers in {root}: {killed}")
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
            if root in _ROOTS:
                _ROOTS.remove(root)


def cleanup() -> None:
    """Release every root still held (and so every process still running in one)."""
    release(list(_ROOTS))


def wait_until(done: Callable[[], bool], deadline: float, what: str) -> None:
    """Poll ``done()`` until true; RuntimeError past ``deadline`` (monotonic)."""
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(POLL_S)


def stop_pool(root: Path, proc: subprocess.Popen[bytes]) -> int:
    """``coretsia-supervisor stop``, then wait for the supervisor; its exit status."""
    if proc.poll() is None:
        subprocess.run(
            [SUPERVISOR, "stop", "--root", str(root)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=DEADLINE_S,
            check=False,
        )
    return proc.wait(timeout=DEADLINE_S)


def _workers_of(proc: subprocess.Popen[bytes]) -> list[int]:
    """The pids of a running pool's worker launchers (``proc``: its supervisor)."""
    if proc.poll() is not None:
        return []
    with contextlib.suppress(psutil.Error):
        return [p.pid for p in descendants_named(psutil.Process(proc.pid), LAUNCHER)]
    return []


# --- records, logs ----------------------------------------------------------------------


def write_config(
    root: Path, workers: int, handler: str, max_requests: int, database: str | None = None
) -> None:
    options = [f'handler = "{handler}"']
    if database is not None:
        options.append(f'database = "{database}"')
    (root / "coretsia.toml").write_text(
        "[worker]\n"
        f"workers = {workers}\n"
        'task_type = "queue"\n'
        'task_source = "sqlite"\n'
        f"max_requests = {max_requests}\n"
        "start_timeout_ms = 120000\n"
        "stop_timeout_ms = 20000\n"
        "\n[worker.source_options]\n" + "\n".join(options) + "\n"
    )


@dataclass(frozen=True)
class Record:
    payload: str
    pid: int
    start: float
    end: float


def line_count(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def read_records(path: Path) -> list[Record]:
    records = []
    if path.exists():
        for line in path.read_text().splitlines():
            payload, pid, start, end = line.split()
            records.append(Record(payload, int(pid), float(start), float(end)))
    return records


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a supervisor's (and guardian's) stderr; other lines skipped."""
    events = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and "event" in event:
                    events.append(event)
    return events


def _ts(event: dict[str, Any]) -> float:
    text = str(event["ts"]).replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(text).timestamp()


def probes(root: Path) -> list[str]:
    """Distinct ``journal_mode synchronous`` pairs the workers' queue connections used.

    RuntimeError when a worker could not find its connection (``pipeline_app._probe``
    reads private names of the ``sqlite`` source): fix the probe, do not report blind.
    """
    path = root / "probe.log"
    if not path.exists():
        raise RuntimeError(f"no worker wrote {path}: pipeline_app._probe did not run")
    pairs = {" ".join(line.split()[1:]) for line in path.read_text().splitlines()}
    failed = sorted(p for p in pairs if p.startswith("unprobed"))
    if failed:
        raise RuntimeError(f"a worker's queue connection could not be probed: {failed}")
    return sorted(pairs)


def shares(records: list[Record], workers: int) -> list[int]:
    """Tasks per process, largest first, padded with zeros to ``workers`` processes.

    A worker that never got a task is part of the spread: it counts as a zero.
    """
    counts = sorted(Counter(r.pid for r in records).values(), reverse=True)
    return counts + [0] * (workers - len(counts))


def cv(counts: list[int]) -> float:
    """Coefficient of variation: population standard deviation over the mean."""
    mean = statistics.fmean(counts) if counts else 0.0
    return statistics.pstdev(counts) / mean if mean else float("nan")


def measure(records: list[Record], tasks: int, workers: int, launched: float) -> dict[str, Any]:
    """Throughput figures of one drain, from the handlers' own records.

    ``cv_all_started`` is the spread over the records that started once every worker had
    taken its first task (the boot stagger excluded); NaN if some worker never took one.
    """
    first = min(r.start for r in records)
    window = max(r.end for r in records) - first
    per_process = shares(records, workers)
    firsts: dict[int, float] = {}
    for r in records:
        firsts[r.pid] = min(r.start, firsts.get(r.pid, r.start))
    all_started = float("nan")
    if len(firsts) >= workers:
        since = max(firsts.values())
        all_started = cv(shares([r for r in records if r.start >= since], workers))
    distinct = len({r.payload for r in records})
    return {
        "tasks": tasks,
        "window_s": window,
        "tasks_per_s": len(records) / window if window > 0 else float("nan"),
        "launch_to_first_s": first - launched,
        "processes": len(firsts),
        "per_process": per_process,
        "cv": cv(per_process),
        "cv_all_started": all_started,
        "lost": tasks - distinct,
        "ran_twice": len(records) - distinct,
    }


# --- the two sides ----------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """How one side drains a prepared root: its command, its log, its stop, its extras."""

    argv: list[str]
    log_name: str
    stop: Callable[[Path, subprocess.Popen[bytes]], int | None]
    """Stop the drained consumer; its exit status (None if it did not exit in time)."""
    extras: Callable[[Path], dict[str, Any]]
    """Side-specific figures, read after the stop."""


def coretsia_side(root: Path, workers: int, tasks: int, task: str) -> Side:
    """A pool of ``workers`` on the ``sqlite`` source, ``tasks`` messages enqueued."""
    write_config(root, workers, f"app:{task}", max_requests=100_000)
    db = root / "var" / "queue.sqlite3"
    with SqliteQueue(db) as queue:
        queue.enqueue(f"t{i}" for i in range(tasks))

    def extras(root: Path) -> dict[str, Any]:
        with SqliteQueue(db, create=False) as queue:
            stats = queue.stats()
        return {"stats": stats, "worker_pragmas": probes(root)}

    argv = [SUPERVISOR, "start", "--root", str(root), "--log-format", "json"]
    return Side(argv, "supervisor.log", stop_pool, extras)


@contextlib.contextmanager
def _huey_app(root: Path) -> Iterator[Any]:
    """``root/hueyapp.py`` imported as ``hueyapp`` (Huey names tasks by module), fresh;
    forgotten again (with the ``app`` it imports) on the way out."""
    names = ("hueyapp", "app")
    for name in names:
        sys.modules.pop(name, None)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("hueyapp")
    finally:
        sys.path.remove(str(root))
        for name in names:
            sys.modules.pop(name, None)


def huey_enqueue(root: Path, task: str, tasks: int) -> str:
    """Enqueue in one transaction (as Coretsia's batch ``enqueue``); the pragmas in force.

    ``SqliteHuey`` has no batch enqueue: the messages are serialized by Huey itself
    (``serialize_task``) and inserted with its own SQL in one transaction, so the setup
    does not pay 5,000 fsyncs. Not measured either way: it happens before the consumer
    starts. The pragmas are read on a connection made by the storage's own constructor.
    """
    with _huey_app(root) as module:
        huey = module.huey
        wrapper = getattr(module, task)
        rows = [(huey.name, huey.serialize_task(wrapper.s(f"t{i}")), 0) for i in range(tasks)]
        with huey.storage.db(commit=True) as cursor:
            cursor.executemany("insert into task (queue, data, priority) values (?, ?, ?)", rows)
        conn = huey.storage.conn
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
        huey.storage.close()
    return f"{journal} {synchronous}"


def _stop_huey(root: Path, proc: subprocess.Popen[bytes]) -> int | None:
    """SIGINT, Huey's graceful stop (workers finish their task; none is left anyway)."""
    if proc.poll() is None:  # not reaped: the group is still ours
        os.killpg(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        return proc.wait(timeout=30)
    return None


def huey_side(root: Path, workers: int, tasks: int, task: str) -> Side:
    """``huey_consumer -k process -w N``, ``tasks`` messages enqueued."""
    pragmas = huey_enqueue(root, task, tasks)

    def extras(root: Path) -> dict[str, Any]:
        with contextlib.closing(sqlite3.connect(root / "huey.sqlite3")) as conn:
            left = conn.execute("select count(*) from task").fetchone()[0]
        return {"stats": {"pending": left}, "pragmas": pragmas}

    # -q: no INFO line per task (Huey logs two by default, Coretsia none); -n: no periodic
    # tasks (there are none). Everything else is Huey's default.
    argv = [HUEY_CONSUMER, "hueyapp.huey", "-k", "process", "-w", str(workers), "-n", "-q"]
    return Side(argv, "consumer.log", _stop_huey, extras)


SIDES: dict[str, Callable[[Path, int, int, str], Side]] = {
    "coretsia": coretsia_side,
    "huey": huey_side,
}


def drain(side: str, workers: int, tasks: int, task: str) -> dict[str, Any]:
    """One side's ``workers`` draining ``tasks`` messages enqueued before its start."""
    root = make_root()
    try:
        how = SIDES[side](root, workers, tasks, task)
        records_path = root / "records.log"
        launched = time.monotonic()
        proc = spawn(how.argv, root, root / how.log_name)

        def drained() -> bool:
            if proc.poll() is not None:
                tail = (root / how.log_name).read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{side} exited with {proc.returncode}: {tail}")
            return line_count(records_path) >= tasks

        wait_until(drained, time.monotonic() + DEADLINE_S, f"{tasks} tasks ({side})")
        stop_status = how.stop(root, proc)
        result = measure(read_records(records_path), tasks, workers, launched)
        result["stop_status"] = stop_status
        result.update(how.extras(root))
        return result
    finally:
        release([root])


def _one_run(side: str, workers: int, tasks: int, task: str) -> dict[str, Any]:
    result = drain(side, workers, tasks, task)
    log(
        f"{side} N={workers} {task}: {result['tasks_per_s']:.0f} tasks/s, first task after "
        f"{result['launch_to_first_s'] * 1000:.0f} ms, per process {result['per_process']}"
    )
    return result


def _order(index: int) -> tuple[str, str]:
    """Which side goes first in run ``index``: alternating, so neither always warms up."""
    return ("coretsia", "huey") if index % 2 == 0 else ("huey", "coretsia")


def throughput(results: Results, sizes: list[int], tasks: int, runs: int) -> None:
    """Coretsia N, Huey N (the order alternating), ... ``runs`` times; every sample kept."""
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for index in range(runs):
        log(f"throughput run {index + 1}/{runs}")
        for n in sizes:
            for side in _order(index):
                samples[f"{side}_n{n}"].append(_one_run(side, n, tasks, "noop"))
    results.data["throughput"] = {
        f"{side}_n{n}": samples[f"{side}_n{n}"] for n in sizes for side in ("coretsia", "huey")
    }


def io_bound(results: Results, runs: int) -> None:
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ideal = IO_TASKS * IO_SLEEP_S / IO_WORKERS
    for index in range(runs):
        log(f"I/O-bound run {index + 1}/{runs}")
        for side in _order(index):
            result = _one_run(side, IO_WORKERS, IO_TASKS, "sleep50")
            result["ideal_s"] = ideal
            result["fraction_of_ideal"] = ideal / result["window_s"]
            samples[f"{side}_io"].append(result)
    results.data["io"] = {f"{side}_io": samples[f"{side}_io"] for side in ("coretsia", "huey")}


# --- soak -------------------------------------------------------------------------------


def _spawn_to_ready(events: list[dict[str, Any]]) -> list[float]:
    """Spawn-to-ready seconds of each *replacement* worker in one log.

    A slot's first ``worker.spawned`` in a log is the pool's start; each later one is a
    replacement (a recycle), paired with the slot's next ``worker.ready``.
    """
    seen: set[int] = set()
    pending: dict[int, float] = {}
    times: list[float] = []
    for event in events:
        slot = event.get("slot")
        if not isinstance(slot, int):
            continue
        if event["event"] == "worker.spawned":
            if slot in seen:
                pending[slot] = _ts(event)
            seen.add(slot)
        elif event["event"] == "worker.ready" and slot in pending:
            times.append(_ts(event) - pending.pop(slot))
    return times


def _count_events(events: list[dict[str, Any]], name: str) -> int:
    return sum(1 for e in events if e["event"] == name)


def _failure_reasons(events: list[dict[str, Any]]) -> list[str]:
    """The reason fields of warning/error events (what failed the pool)."""
    found = []
    for event in events:
        if event.get("level") in ("warning", "error", "critical"):
            detail = {k: v for k, v in event.items() if k not in ("ts", "level")}
            found.append(json.dumps(detail, sort_keys=True))
    return found


def _pool_failed(events: list[dict[str, Any]]) -> list[str]:
    """The ``reason`` of each ``pool.failed`` event."""
    return [str(e.get("reason")) for e in events if e["event"] == "pool.failed"]


def _db_rows(db: Path) -> dict[str, int]:
    """What the queue's table itself says (read-only, beside ``stats()``)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        one = conn.execute
        return {
            "rows": one("select count(*) from messages").fetchone()[0],
            "done": one("select count(*) from messages where state = 'done'").fetchone()[0],
            "retried_rows": one("select count(*) from messages where attempts > 0").fetchone()[0],
            "max_attempts_seen": one("select coalesce(max(attempts), 0) from messages").fetchone()[
                0
            ],
        }
    finally:
        conn.close()


def p90(values: list[float]) -> float:
    """The 90th percentile (inclusive method: within the values' range)."""
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def soak(results: Results, tasks: int) -> None:
    """Recycling pool, one worker SIGKILLed mid-run, restarted, drained; nothing lost."""
    root = make_root()
    try:
        results.data["soak"] = _soak(root, tasks)
    finally:
        release([root])


def _soak(root: Path, tasks: int) -> dict[str, Any]:
    write_config(root, SOAK_WORKERS, "app:soak", max_requests=SOAK_MAX_REQUESTS)
    db = root / "var" / "queue.sqlite3"
    victim_at = tasks // 4
    expected = [f"s{i}" if i != victim_at else f"s{i}!" for i in range(tasks)]
    with SqliteQueue(db) as queue:
        queue.enqueue(expected)
    records_path = root / "records.log"
    out: dict[str, Any] = {"tasks": tasks, "workers": SOAK_WORKERS}
    out["max_requests"] = SOAK_MAX_REQUESTS
    argv = [SUPERVISOR, "start", "--root", str(root), "--log-format", "json"]
    started = time.monotonic()
    first = spawn(argv, root, root / "supervisor-1.log")
    victim_file = root / "victim.pid"
    wait_until(
        lambda: first.poll() is not None or victim_file.exists(),
        time.monotonic() + DEADLINE_S,
        "the victim task (a quarter into the soak)",
    )
    if first.poll() is not None:
        raise RuntimeError(f"the soak pool exited early with {first.returncode}")
    time.sleep(0.2)  # the others go on meanwhile: the kill lands in a busy pool
    victim = int(victim_file.read_text().split()[0])
    if victim not in _workers_of(first):
        raise RuntimeError(f"the victim {victim} is not one of the pool's workers")
    os.kill(victim, signal.SIGKILL)  # a worker of a live, unreaped supervisor: still it
    out["killed_pid"] = victim
    out["killed_after_records"] = line_count(records_path)
    log(f"soak: SIGKILLed worker {victim} after {out['killed_after_records']} tasks")
    first.wait(timeout=DEADLINE_S)  # an unexpected worker exit fails the pool
    out["first_exit_status"] = first.returncode
    with SqliteQueue(db, create=False) as queue:
        out["stats_after_failure"] = queue.stats()
    log(f"soak: the pool exited {first.returncode}; {out['stats_after_failure']}")

    second = spawn(argv, root, root / "supervisor-2.log")

    def settled() -> bool:
        if second.poll() is not None:
            raise RuntimeError(f"the restarted pool exited with {second.returncode}")
        with SqliteQueue(db, create=False) as queue:
            stats = queue.stats()
        return stats["done"] + stats["failed"] >= tasks

    wait_until(settled, time.monotonic() + DEADLINE_S, "the soak to drain")
    out["second_exit_status"] = stop_pool(root, second)
    out["wall_s"] = time.monotonic() - started
    with SqliteQueue(db, create=False) as queue:
        out["stats"] = queue.stats()
    out["db"] = _db_rows(db)
    records = read_records(records_path)
    per_payload = Counter(r.payload for r in records)
    per_process = Counter(r.pid for r in records)
    out["records"] = len(records)
    out["lost"] = len(set(expected) - per_payload.keys())
    out["ran_twice"] = sorted(p for p, c in per_payload.items() if c > 1)
    out["max_per_process"] = max(per_process.values())
    out["processes"] = len(per_process)
    out["done_equals_tasks"] = out["stats"]["done"] == tasks == out["db"]["done"]
    logs = [read_events(root / f"supervisor-{i}.log") for i in (1, 2)]
    recycle_times = [t for events in logs for t in _spawn_to_ready(events)]
    out["retired_events"] = sum(_count_events(e, "worker.retired") for e in logs)
    out["recycles"] = len(recycle_times)
    out["recycle_spawn_to_ready_s"] = recycle_times
    out["task_failed_events"] = sum(_count_events(e, "task.failed") for e in logs)
    out["settlement_failures"] = sum(
        1 for e in logs for reason in _failure_reasons(e) if "settlement-failed" in reason
    )
    out["first_pool_failed"] = _pool_failed(logs[0])
    out["first_pool_failure"] = _failure_reasons(logs[0])[-3:]
    out["worker_pragmas"] = probes(root)
    return out


# --- two pools --------------------------------------------------------------------------


def two_pools(results: Results, tasks: int) -> None:
    """Two roots, one database: messages run by both pools at overlapping times."""
    shared = make_root("cq-db-", app=False)
    roots = [shared]
    try:
        roots += [make_root(), make_root()]
        results.data["two_pools"] = _two_pools(shared / "queue.sqlite3", roots[1:], tasks)
    finally:
        release(roots)


def _two_pools(db: Path, roots: list[Path], tasks: int) -> dict[str, Any]:
    with SqliteQueue(db) as queue:
        queue.enqueue(f"p{i}" for i in range(tasks))
    for root in roots:
        write_config(root, PAIR_WORKERS, "app:sleep10", PAIR_MAX_REQUESTS, database=str(db))
    out: dict[str, Any] = {"tasks": tasks, "workers_per_pool": PAIR_WORKERS}
    out["max_requests"] = PAIR_MAX_REQUESTS
    argv = [SUPERVISOR, "start", "--log-format", "json", "--root"]
    procs = [spawn([*argv, str(root)], root, root / "supervisor.log") for root in roots]

    def settled() -> bool:
        with SqliteQueue(db, create=False) as queue:
            stats = queue.stats()
        both_gone = all(p.poll() is not None for p in procs)
        return both_gone or stats["done"] + stats["failed"] >= tasks

    wait_until(settled, time.monotonic() + DEADLINE_S, "the two pools to drain")
    out["exit_status"] = [stop_pool(r, p) for r, p in zip(roots, procs, strict=True)]
    with SqliteQueue(db, create=False) as queue:
        out["stats"] = queue.stats()
    runs: dict[str, list[tuple[int, Record]]] = defaultdict(list)
    out["records_per_pool"] = []
    for index, root in enumerate(roots):
        records = read_records(root / "records.log")
        out["records_per_pool"].append(len(records))
        for record in records:
            runs[record.payload].append((index, record))
    concurrent = 0
    by_both = 0
    for entries in runs.values():
        pools = {index for index, _ in entries}
        if len(pools) < 2:
            continue
        by_both += 1
        a = [r for i, r in entries if i == 0]
        b = [r for i, r in entries if i == 1]
        if any(x.start < y.end and y.start < x.end for x in a for y in b):
            concurrent += 1
    out["ran_by_both"] = by_both
    out["ran_by_both_concurrently"] = concurrent
    out["ran_twice"] = sum(1 for entries in runs.values() if len(entries) > 1)
    out["not_run"] = tasks - len(runs)  # still in the database: pending, not lost
    out["failures"] = [
        [e for e in _failure_reasons(read_events(r / "supervisor.log")) if "pool.failed" in e]
        for r in roots
    ]
    return out


# --- report -----------------------------------------------------------------------------


def _med(samples: list[dict[str, Any]], key: str) -> float:
    return median([float(s[key]) for s in samples])


def _verdict(ok: bool) -> str:
    return "pass" if ok else "**FAIL**"


def _stats_text(stats: dict[str, int]) -> str:
    return ", ".join(f"{name.replace('_', ' ')} {count:,}" for name, count in stats.items())


def table(results: Results) -> str:
    lines = []
    tp = results.data.get("throughput", {})
    if tp:
        lines += [
            "| no-op tasks | N | tasks/s | launch to first task | tasks per process (run 1) "
            "| CV | CV, all started | lost / ran twice |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for key, samples in tp.items():
            side, n = key.rsplit("_n", 1)
            lost = sum(s["lost"] for s in samples)
            twice = sum(s["ran_twice"] for s in samples)
            lines.append(
                f"| {side} | {n} | {_med(samples, 'tasks_per_s'):.0f} "
                f"| {_med(samples, 'launch_to_first_s') * 1000:.0f} ms "
                f"| {', '.join(map(str, samples[0]['per_process']))} "
                f"| {_med(samples, 'cv'):.3f} | {_med(samples, 'cv_all_started'):.3f} "
                f"| {lost} / {twice} |"
            )
        lines.append("")
    io = results.data.get("io", {})
    if io:
        lines += [
            f"| I/O-bound ({IO_TASKS} x {IO_SLEEP_S * 1000:.0f} ms, N={IO_WORKERS}) "
            "| window | ideal | fraction of ideal | tasks per process (run 1) |",
            "|---|---|---|---|---|",
        ]
        for key, samples in io.items():
            lines.append(
                f"| {key.removesuffix('_io')} | {_med(samples, 'window_s'):.3f} s "
                f"| {samples[0]['ideal_s']:.3f} s | {_med(samples, 'fraction_of_ideal'):.3f} "
                f"| {', '.join(map(str, samples[0]['per_process']))} |"
            )
        lines.append("")
    if "soak" in results.data:
        lines += _soak_rows(results.data["soak"])
    if "two_pools" in results.data:
        lines += _pair_rows(results.data["two_pools"])
    return "\n".join(lines)


def _soak_rows(s: dict[str, Any]) -> list[str]:
    times = s["recycle_spawn_to_ready_s"]
    limit = s["max_requests"] + 1
    refused = s["task_failed_events"] + s["settlement_failures"]
    spawn_ready = (
        f"median {median(times) * 1000:.0f} ms, p90 {p90(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms ({len(times)} recycles)"
        if times
        else "none"
    )
    failed = ", ".join(s["first_pool_failed"]) or "no pool.failed event"
    twice = f" {s['ran_twice'][:5]}" if s["ran_twice"] else ""
    return [
        f"| soak: {s['tasks']:,} no-op, {s['workers']} workers, max_requests = "
        f"{s['max_requests']}, one worker SIGKILLed | result | check |",
        "|---|---|---|",
        f"| pool after the SIGKILL ({s['killed_after_records']:,} tasks in) | exit "
        f"{s['first_exit_status']} ({failed}); {_stats_text(s['stats_after_failure'])} "
        "| fails by design |",
        f"| lost | {s['lost']} | = 0: {_verdict(s['lost'] == 0)} |",
        f"| stats() at the end | {_stats_text(s['stats'])} | done = {s['tasks']:,}: "
        f"{_verdict(s['done_equals_tasks'])} |",
        f"| handler ran to its end twice | {len(s['ran_twice'])}{twice} "
        f"| = 0 (the victim never reached its end): {_verdict(not s['ran_twice'])} |",
        f"| rows with attempts > 0 | {s['db']['retried_rows']} | = 1 (the victim's, recovered "
        f"by the restarted pool): {_verdict(s['db']['retried_rows'] == 1)} |",
        f"| settlements refused (task.failed, settlement-failed) | {refused} "
        f"| = 0: {_verdict(refused == 0)} |",
        f"| attempts per process, max | {s['max_per_process']} | <= max_requests + 1 = "
        f"{limit}: {_verdict(s['max_per_process'] <= limit)} |",
        f"| restarted pool, stopped | exit {s['second_exit_status']} "
        f"| = 0: {_verdict(s['second_exit_status'] == 0)} |",
        f"| worker processes / recycles / worker.retired | {s['processes']} / "
        f"{s['recycles']} / {s['retired_events']} | |",
        f"| recycled workers, spawn to ready | {spawn_ready} | |",
        f"| wall time (both generations, the restart included) | {s['wall_s']:.1f} s | |",
        "",
    ]


def _pair_rows(p: dict[str, Any]) -> list[str]:
    statuses = p["exit_status"]
    return [
        f"| two pools, one database: {p['tasks']:,} x 10 ms, {p['workers_per_pool']} "
        f"workers each, max_requests = {p['max_requests']} | result | check |",
        "|---|---|---|",
        f"| run by both pools at overlapping times | {p['ran_by_both_concurrently']} | = 0: "
        f"{_verdict(p['ran_by_both_concurrently'] == 0)} |",
        f"| run by both pools / run twice / never run | {p['ran_by_both']} / "
        f"{p['ran_twice']} / {p['not_run']} | never run: left pending when both exited |",
        f"| tasks run per pool | {' / '.join(f'{n:,}' for n in p['records_per_pool'])} | |",
        f"| exit status of both supervisors | {', '.join(map(str, statuses))} "
        f"| = 0: {_verdict(all(status == 0 for status in statuses))} |",
        *(
            f"| pool {i + 1} failed | {'; '.join(reasons)} | |"
            for i, reasons in enumerate(p["failures"])
            if reasons
        ),
        f"| stats() at the end | {_stats_text(p['stats'])} | |",
        "",
    ]


def _pragmas(pair: str) -> str:
    journal, _, sync = pair.partition(" ")
    return f"journal_mode={journal}, synchronous={SYNC.get(sync, sync)}"


def _durability(results: Results) -> list[str]:
    """What each side's connections actually used, as read in this run."""
    coretsia: set[str] = set()
    huey: set[str] = set()
    for group in ("throughput", "io"):
        for key, samples in results.data.get(group, {}).items():
            for s in samples:
                if key.startswith("coretsia"):
                    coretsia.update(s.get("worker_pragmas", []))
                else:
                    huey.add(s["pragmas"])
    if "soak" in results.data:
        coretsia.update(results.data["soak"].get("worker_pragmas", []))
    results.data["durability"] = {"coretsia_workers": sorted(coretsia), "huey": sorted(huey)}
    return [
        "Durability in force (read from the connections): Coretsia workers "
        f"{'; '.join(map(_pragmas, sorted(coretsia))) or 'not run'} (one commit per task: "
        "an ack and the next lease together, at least once; enqueue always FULL); Huey "
        f"{'; '.join(map(_pragmas, sorted(huey))) or 'not run'} (the row is deleted at "
        "dequeue: one commit per task, at most once)."
    ]


# --- main -------------------------------------------------------------------------------


def machine() -> dict[str, object]:
    import huey

    return {**harness.machine.machine(), "huey": huey.__version__}


def ensure_bytecode() -> None:
    """Compile what the processes import (Coretsia's and Huey's) when no fresh .pyc exists.

    Without it, under ``PYTHONDONTWRITEBYTECODE=1`` and an installer that does not compile,
    every worker would compile its modules at every start (see docs/performance.md).
    """
    import compileall

    import huey

    harness.bytecode.ensure_bytecode()
    compileall.compile_dir(os.path.dirname(huey.__file__), quiet=1)


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated worker counts, each at least 1."""
    try:
        sizes = [int(n) for n in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"worker counts must be at least 1: {text!r}")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument(
        "--sizes", type=_sizes, default=[1, 2, 4], help="worker counts (default 1,2,4)"
    )
    parser.add_argument("--only", default="", help=",".join(PARTS))
    parser.add_argument("--soak", action="store_true", help="add soak,two-pools")
    parser.add_argument("--soak-tasks", type=int, default=SOAK_TASKS)
    parser.add_argument(
        "--huey-synchronous",
        choices=("match", "FULL", "NORMAL"),
        default="match",
        help="Huey's PRAGMA synchronous (default: what Coretsia's workers use, read in the "
        "warm-up)",
    )
    args = parser.parse_args()
    if args.runs < 1 or args.tasks < 1:
        parser.error("--runs and --tasks must be at least 1")
    if args.soak_tasks < 8:
        parser.error("--soak-tasks must be at least 8")
    parts = set(filter(None, args.only.split(","))) or {"throughput", "io"}
    if args.soak:
        parts |= {"soak", "two-pools"}
    unknown = parts - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")

    started = datetime.datetime.now(datetime.timezone.utc)
    results = Results(started.isoformat(timespec="seconds"), machine(), args.runs)
    results.data["load_average_before"] = load_average()
    ensure_bytecode()
    clock = time.monotonic()
    try:
        if parts & {"throughput", "io"}:
            log("warm-up (discarded): 200 tasks on each side")
            warm = _one_run("coretsia", 1, 200, "noop")
            sync = args.huey_synchronous
            if sync == "match":
                used = {SYNC.get(p.split()[-1], "") for p in warm["worker_pragmas"]}
                if len(used) != 1 or not used <= {"FULL", "NORMAL"}:
                    raise RuntimeError(f"Coretsia's workers used {used}: use --huey-synchronous")
                sync = used.pop()
                results.notes.append(f"Huey's synchronous: {sync}, matching Coretsia's workers")
            else:
                results.notes.append(f"Huey's synchronous: {sync} (--huey-synchronous)")
            os.environ["CQ_HUEY_SYNCHRONOUS"] = sync
            _one_run("huey", 1, 200, "noop")
        if "throughput" in parts:
            throughput(results, args.sizes, args.tasks, args.runs)
        if "io" in parts:
            io_bound(results, args.runs)
        if "soak" in parts:
            soak(results, args.soak_tasks)
        if "two-pools" in parts:
            two_pools(results, PAIR_TASKS)
    finally:
        cleanup()
    results.data["load_average_after"] = load_average()
    results.data["wall_s"] = time.monotonic() - clock
    durability = _durability(results)
    text = "\n".join(
        [
            f"# Coretsia queue benchmark, {results.started}",
            "",
            f"Machine: {results.machine['cores']} cores, {results.machine['memory_gib']} GiB,"
            f" CPython {results.machine['python']}, {results.machine['platform']};"
            f" Huey {results.machine['huey']}. Commit {results.machine['commit']}."
            f" Runs: {results.runs} (medians)."
            f" Load average before: {results.data['load_average_before']}, after:"
            f" {results.data['load_average_after']}. Wall time: {results.data['wall_s']:.0f} s.",
            "",
            *durability,
            "",
            table(results),
            *(f"- {note}" for note in results.notes),
        ]
    )
    save(results, text, started, prefix="queue-")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on TERM too
    sys.exit(main())
