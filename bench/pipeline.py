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
  for N = ``--sizes`` (1, 2, 4) workers, Coretsia and Huey interleaved, ``--runs`` times
  (3): tasks/s (first task start to last task end), launch to first task start, tasks per
  worker process and their coefficient of variation (population standard deviation over
  the mean).
* ``io``: 200 tasks that sleep 50 ms on 4 workers, both sides: the fraction of ideal
  parallel throughput (ideal = 200 x 50 ms / 4 = 2.5 s over the measured window).
* ``soak``: 20,000 no-op tasks through 4 workers with ``max_requests = 50`` (recycling);
  a quarter in, the worker running the one marked task (it sleeps, holding its lease) is
  SIGKILLed, so the kill lands mid-task by construction; the pool fails by design (an
  unexpected worker exit) and is started again to finish. Checks: nothing lost (every
  payload's handler ran to its end, ``stats()`` says all ``done``), nothing settled twice,
  the killed lease recovered once, the per-process attempt maximum (<= max_requests + 1),
  recycles, and the spawn-to-ready times of recycled workers from the JSON log.
* ``two-pools``: two roots (2 workers each, ``max_requests = 25``, 10 ms tasks) on one
  database (an absolute ``database`` path) draining 2,000 messages together; counts the
  messages run by both pools, those run by both at overlapping times (must be 0), and
  how each pool ended.

Every wait is bounded (``DEADLINE_S``); every process started here is killed by pid (its
tree, and whatever runs in its root) at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import platform
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from coretsia.sources.sqlite_queue import SqliteQueue

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
BIN = Path(sys.executable).parent
SUPERVISOR = str(BIN / "coretsia-supervisor")
HUEY_CONSUMER = str(BIN / "huey_consumer")
DEADLINE_S = 300.0
"""Bound on any single wait (a whole drain included)."""
POLL_S = 0.05
IO_TASKS, IO_WORKERS, IO_SLEEP_S = 200, 4, 0.05
SOAK_TASKS, SOAK_WORKERS, SOAK_MAX_REQUESTS = 20_000, 4, 50
PAIR_TASKS, PAIR_WORKERS, PAIR_MAX_REQUESTS = 2_000, 2, 25


def log(message: str) -> None:
    print(f"[bench-queue {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --- processes --------------------------------------------------------------------------


_STARTED: list[tuple[subprocess.Popen[bytes], Path]] = []
"""Every process started here, with its root: killed (tree and root) by ``cleanup``."""


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


def _tree(proc: subprocess.Popen[bytes], root: Path) -> list[psutil.Process]:
    """``proc``, its descendants, and any live process whose working directory is ``root``."""
    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        top = psutil.Process(proc.pid)
        for each in [top, *top.children(recursive=True)]:
            found[each.pid] = each
    for each in psutil.process_iter(["cwd"]):
        with contextlib.suppress(psutil.Error):
            if each.info["cwd"] == str(root) and each.pid != os.getpid():
                found[each.pid] = each
    return list(found.values())


def kill(proc: subprocess.Popen[bytes], root: Path) -> list[int]:
    """SIGKILL ``proc``'s tree and whatever runs in ``root``; reap; the pids killed."""
    left = [p for p in _tree(proc, root) if _alive(p)]
    for each in left:
        with contextlib.suppress(psutil.Error):
            each.kill()
    psutil.wait_procs(left, timeout=10)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    return [p.pid for p in left]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def cleanup() -> None:
    while _STARTED:
        proc, root = _STARTED.pop()
        killed = kill(proc, root)
        if killed:
            log(f"killed leftovers in {root}: {killed}")


def wait_until(done: Any, deadline: float, what: str) -> None:
    """Poll ``done()`` until true; RuntimeError past ``deadline`` (monotonic)."""
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(POLL_S)


# --- roots, records, logs ---------------------------------------------------------------


def make_root() -> Path:
    """A short throw-away root (AF_UNIX paths must stay under about 100 bytes)."""
    root = Path(tempfile.mkdtemp(prefix="cq-", dir="/tmp"))
    shutil.copy(BENCH / "pipeline_app.py", root / "app.py")
    shutil.copy(BENCH / "pipeline_huey_app.py", root / "hueyapp.py")
    import py_compile

    for name in ("app.py", "hueyapp.py"):
        py_compile.compile(str(root / name), doraise=True)
    return root


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
    """Distinct ``journal_mode synchronous`` pairs the workers' queue connections used."""
    path = root / "probe.log"
    if not path.exists():
        return []
    return sorted({" ".join(line.split()[1:]) for line in path.read_text().splitlines()})


def measure(records: list[Record], tasks: int, launched: float) -> dict[str, Any]:
    """Throughput figures of one drain, from the handlers' own records."""
    first = min(r.start for r in records)
    window = max(r.end for r in records) - first
    per_process = Counter(r.pid for r in records)
    counts = list(per_process.values())
    mean = statistics.fmean(counts)
    distinct = len({r.payload for r in records})
    return {
        "tasks": tasks,
        "window_s": window,
        "tasks_per_s": len(records) / window if window > 0 else float("nan"),
        "launch_to_first_s": first - launched,
        "processes": len(counts),
        "per_process": sorted(counts, reverse=True),
        "cv": statistics.pstdev(counts) / mean if mean else float("nan"),
        "lost": tasks - distinct,
        "ran_twice": len(records) - distinct,
    }


# --- the two sides ----------------------------------------------------------------------


def coretsia_drain(workers: int, tasks: int, handler: str) -> dict[str, Any]:
    """One Coretsia pool draining ``tasks`` messages enqueued before its start."""
    root = make_root()
    write_config(root, workers, f"app:{handler}", max_requests=100_000)
    db = root / "var" / "queue.sqlite3"
    with SqliteQueue(db) as queue:
        queue.enqueue(f"t{i}" for i in range(tasks))
    records_path = root / "records.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        launched = time.monotonic()
        proc = spawn(
            [SUPERVISOR, "start", "--root", str(root), "--log-format", "json"],
            root,
            root / "supervisor.log",
        )

        def drained() -> bool:
            if proc is not None and proc.poll() is not None:
                tail = (root / "supervisor.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the pool exited with {proc.returncode}: {tail}")
            return line_count(records_path) >= tasks

        wait_until(drained, time.monotonic() + DEADLINE_S, f"{tasks} tasks (coretsia)")
        stop_pool(root, proc)
        result = measure(read_records(records_path), tasks, launched)
        with SqliteQueue(db, create=False) as queue:
            result["stats"] = queue.stats()
        result["worker_pragmas"] = probes(root)
        return result
    finally:
        if proc is not None:
            kill(proc, root)
        shutil.rmtree(root, ignore_errors=True)


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


def _load_huey_app(root: Path) -> Any:
    """Import ``root/hueyapp.py`` as ``hueyapp`` (Huey names tasks by module), fresh."""
    for name in ("hueyapp", "app"):
        sys.modules.pop(name, None)
    sys.path.insert(0, str(root))
    try:
        spec = importlib.util.spec_from_file_location("hueyapp", root / "hueyapp.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["hueyapp"] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(root))


def huey_enqueue(module: Any, task: str, tasks: int) -> str:
    """Enqueue in one transaction (as Coretsia's batch ``enqueue``); the pragmas in force.

    ``SqliteHuey`` has no batch enqueue: the messages are serialized by Huey itself
    (``serialize_task``) and inserted with its own SQL in one transaction, so the setup
    does not pay 5,000 fsyncs. Not measured either way: it happens before the consumer
    starts. The pragmas are read on a connection made by the storage's own constructor.
    """
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


def huey_drain(workers: int, tasks: int, task: str) -> dict[str, Any]:
    """``huey_consumer -k process -w N`` draining ``tasks`` messages enqueued before it."""
    root = make_root()
    pragmas = huey_enqueue(_load_huey_app(root), task, tasks)
    for name in ("hueyapp", "app"):
        sys.modules.pop(name, None)
    records_path = root / "records.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        launched = time.monotonic()
        proc = spawn(
            # -q: no INFO line per task (Huey logs two by default, Coretsia none); -n: no
            # periodic tasks (there are none). Everything else is Huey's default.
            [HUEY_CONSUMER, "hueyapp.huey", "-k", "process", "-w", str(workers), "-n", "-q"],
            root,
            root / "consumer.log",
        )

        def drained() -> bool:
            if proc is not None and proc.poll() is not None:
                tail = (root / "consumer.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"huey_consumer exited with {proc.returncode}: {tail}")
            return line_count(records_path) >= tasks

        wait_until(drained, time.monotonic() + DEADLINE_S, f"{tasks} tasks (huey)")
        # SIGINT is Huey's graceful stop (workers finish their task); nothing is left anyway.
        os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        result = measure(read_records(records_path), tasks, launched)
        with contextlib.closing(sqlite3.connect(root / "huey.sqlite3")) as conn:
            left = conn.execute("select count(*) from task").fetchone()[0]
        result["stats"] = {"pending": left}
        result["pragmas"] = pragmas
        return result
    finally:
        if proc is not None:
            kill(proc, root)
        shutil.rmtree(root, ignore_errors=True)


# --- results ----------------------------------------------------------------------------


@dataclass
class Results:
    started: str
    machine: dict[str, object]
    runs: int
    data: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _one_run(side: str, workers: int, tasks: int, task: str) -> dict[str, Any]:
    drain = coretsia_drain if side == "coretsia" else huey_drain
    result = drain(workers, tasks, task)
    log(
        f"{side} N={workers} {task}: {result['tasks_per_s']:.0f} tasks/s, first task after "
        f"{result['launch_to_first_s'] * 1000:.0f} ms, per process {result['per_process']}"
    )
    return result


def throughput(results: Results, sizes: list[int], tasks: int, runs: int) -> None:
    """Coretsia N, Huey N, ... interleaved, ``runs`` times; every sample kept."""
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in range(runs):
        log(f"throughput run {run + 1}/{runs}")
        for n in sizes:
            for side in ("coretsia", "huey"):
                samples[f"{side}_n{n}"].append(_one_run(side, n, tasks, "noop"))
    results.data["throughput"] = dict(samples)


def io_bound(results: Results, runs: int) -> None:
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ideal = IO_TASKS * IO_SLEEP_S / IO_WORKERS
    for run in range(runs):
        log(f"I/O-bound run {run + 1}/{runs}")
        for side in ("coretsia", "huey"):
            result = _one_run(side, IO_WORKERS, IO_TASKS, "sleep50")
            result["ideal_s"] = ideal
            result["fraction_of_ideal"] = ideal / result["window_s"]
            samples[f"{side}_io"].append(result)
    results.data["io"] = dict(samples)


# --- soak -------------------------------------------------------------------------------


def _launcher_pids(proc: subprocess.Popen[bytes]) -> list[int]:
    pids = []
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "coretsia.supervisor.launcher" in " ".join(child.cmdline()):
                    pids.append(child.pid)
    return pids


def _spawn_to_ready(events: list[dict[str, Any]]) -> tuple[list[float], int]:
    """Spawn-to-ready seconds of each *replacement* worker in one log; and the initial count.

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
    return times, len(seen)


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


def soak(results: Results, tasks: int) -> None:
    """Recycling pool, one worker SIGKILLed mid-run, restarted, drained; nothing lost."""
    root = make_root()
    write_config(root, SOAK_WORKERS, "app:soak", max_requests=SOAK_MAX_REQUESTS)
    db = root / "var" / "queue.sqlite3"
    victim_at = tasks // 4
    expected = {f"s{i}" if i != victim_at else f"s{i}!" for i in range(tasks)}
    with SqliteQueue(db) as queue:
        queue.enqueue(sorted(expected, key=lambda p: int(p[1:].rstrip("!"))))
    records_path = root / "records.log"
    out: dict[str, Any] = {"tasks": tasks, "workers": SOAK_WORKERS}
    out["max_requests"] = SOAK_MAX_REQUESTS
    started = time.monotonic()
    try:
        first = spawn(
            [SUPERVISOR, "start", "--root", str(root), "--log-format", "json"],
            root,
            root / "supervisor-1.log",
        )
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
        if victim not in _launcher_pids(first):
            raise RuntimeError(f"the victim {victim} is not one of the pool's workers")
        os.kill(victim, signal.SIGKILL)
        out["killed_pid"] = victim
        out["killed_after_records"] = line_count(records_path)
        log(f"soak: SIGKILLed worker {victim} after {out['killed_after_records']} tasks")
        first.wait(timeout=DEADLINE_S)  # an unexpected worker exit fails the pool
        out["first_exit_status"] = first.returncode
        with SqliteQueue(db, create=False) as queue:
            out["stats_after_failure"] = queue.stats()
        log(f"soak: the pool exited {first.returncode}; {out['stats_after_failure']}")

        second = spawn(
            [SUPERVISOR, "start", "--root", str(root), "--log-format", "json"],
            root,
            root / "supervisor-2.log",
        )

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
        out["lost"] = len(expected - per_payload.keys())
        out["ran_twice"] = sorted(p for p, c in per_payload.items() if c > 1)
        out["max_per_process"] = max(per_process.values())
        out["processes"] = len(per_process)
        out["done_equals_tasks"] = out["stats"]["done"] == tasks == out["db"]["done"]
        logs = [read_events(root / f"supervisor-{i}.log") for i in (1, 2)]
        recycle_times: list[float] = []
        for events in logs:
            times, _ = _spawn_to_ready(events)
            recycle_times += times
        out["retired_events"] = sum(_count_events(e, "worker.retired") for e in logs)
        out["recycles"] = len(recycle_times)
        out["recycle_spawn_to_ready_s"] = recycle_times
        out["task_failed_events"] = sum(_count_events(e, "task.failed") for e in logs)
        out["first_pool_failure"] = _failure_reasons(logs[0])[-3:]
        out["worker_pragmas"] = probes(root)
    finally:
        for proc, proc_root in list(_STARTED):
            if proc_root == root:
                kill(proc, root)
                _STARTED.remove((proc, proc_root))
        shutil.rmtree(root, ignore_errors=True)
    results.data["soak"] = out


def two_pools(results: Results, tasks: int) -> None:
    """Two roots, one database: messages run by both pools at overlapping times."""
    shared = Path(tempfile.mkdtemp(prefix="cq-db-", dir="/tmp"))
    db = shared / "queue.sqlite3"
    with SqliteQueue(db) as queue:
        queue.enqueue(f"p{i}" for i in range(tasks))
    roots = [make_root(), make_root()]
    for root in roots:
        write_config(root, PAIR_WORKERS, "app:sleep10", PAIR_MAX_REQUESTS, database=str(db))
    out: dict[str, Any] = {"tasks": tasks, "workers_per_pool": PAIR_WORKERS}
    out["max_requests"] = PAIR_MAX_REQUESTS
    try:
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
    finally:
        for proc, proc_root in list(_STARTED):
            if proc_root in roots:
                kill(proc, proc_root)
                _STARTED.remove((proc, proc_root))
        for root in [*roots, shared]:
            shutil.rmtree(root, ignore_errors=True)
    results.data["two_pools"] = out


# --- report -----------------------------------------------------------------------------


def _med(samples: list[dict[str, Any]], key: str) -> float:
    return median([float(s[key]) for s in samples])


def table(results: Results) -> str:
    lines = []
    tp = results.data.get("throughput", {})
    if tp:
        lines += [
            "| no-op tasks | N | tasks/s | launch to first task | tasks per process (run 1) "
            "| CV | lost / ran twice |",
            "|---|---|---|---|---|---|---|",
        ]
        for key, samples in tp.items():
            side, n = key.rsplit("_n", 1)
            lost = sum(s["lost"] for s in samples)
            twice = sum(s["ran_twice"] for s in samples)
            lines.append(
                f"| {side} | {n} | {_med(samples, 'tasks_per_s'):.0f} "
                f"| {_med(samples, 'launch_to_first_s') * 1000:.0f} ms "
                f"| {', '.join(map(str, samples[0]['per_process']))} "
                f"| {_med(samples, 'cv'):.3f} | {lost} / {twice} |"
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
    ok_lost = s["lost"] == 0 and s["done_equals_tasks"]
    ok_max = s["max_per_process"] <= s["max_requests"] + 1
    ok_once = s["db"]["done"] == s["tasks"] - s["lost"] and s["task_failed_events"] == 0
    spawn_ready = (
        f"median {median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms" if times else "none"
    )
    return [
        f"| soak ({s['tasks']} no-op, {s['workers']} workers, max_requests "
        f"{s['max_requests']}, one worker SIGKILLed) | result | check |",
        "|---|---|---|",
        f"| pool after the SIGKILL | exit {s['first_exit_status']}, "
        f"{s['stats_after_failure']} | fails by design |",
        f"| lost (payloads never run to the end) | {s['lost']} | "
        f"{'pass' if ok_lost else '**FAIL**'} |",
        f"| stats() at the end | {s['stats']} | done = {s['tasks']}: "
        f"{'pass' if s['done_equals_tasks'] else '**FAIL**'} |",
        f"| handler ran to its end twice | {len(s['ran_twice'])} {s['ran_twice'][:5]} "
        "| 0 expected (the victim never reached its end) |",
        f"| rows with attempts > 0 (recovered leases) | {s['db']['retried_rows']} "
        "| 1 expected (the victim's) |",
        f"| settled twice | done rows {s['db']['done']}, payloads run {s['tasks'] - s['lost']}, "
        f"settlement failures (task.failed) {s['task_failed_events']} | a row settles once "
        f"(lease token); equal, none failed: {'pass' if ok_once else '**FAIL**'} |",
        f"| attempts per process, max | {s['max_per_process']} | <= max_requests + 1 = "
        f"{s['max_requests'] + 1}: {'pass' if ok_max else '**FAIL**'} |",
        f"| worker processes / recycles / worker.retired | {s['processes']} / "
        f"{s['recycles']} / {s['retired_events']} | |",
        f"| recycled workers, spawn to ready | {spawn_ready} | |",
        f"| wall time | {s['wall_s']:.1f} s | |",
        "",
    ]


def _pair_rows(p: dict[str, Any]) -> list[str]:
    verdict = "pass" if p["ran_by_both_concurrently"] == 0 else "**FAIL**"
    return [
        f"| two pools on one database ({p['tasks']} x 10 ms, {p['workers_per_pool']} "
        f"workers each, max_requests {p['max_requests']}) | result | check |",
        "|---|---|---|",
        f"| run by both pools at overlapping times | {p['ran_by_both_concurrently']} | = 0: "
        f"{verdict} |",
        f"| run by both pools / run twice / never run | {p['ran_by_both']} / "
        f"{p['ran_twice']} / {p['not_run']} | never run: left pending when both exited |",
        f"| tasks run per pool | {p['records_per_pool']} | both drained |",
        f"| exit status of the two supervisors | {p['exit_status']} | [0, 0] |",
        *(
            f"| pool {i + 1} failed | {'; '.join(reasons)} | |"
            for i, reasons in enumerate(p["failures"])
            if reasons
        ),
        f"| stats() at the end | {p['stats']} | |",
        "",
    ]


def commit() -> str:
    """The checked-out commit, ``+dirty`` when the tree has changes (what was measured)."""
    git = ["git", "-C", str(BENCH)]
    head = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    dirty = subprocess.run(
        [*git, "status", "--porcelain"], capture_output=True, text=True, check=False
    )
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") or "unknown"


def machine() -> dict[str, object]:
    import huey

    return {
        "commit": commit(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "huey": huey.__version__,
    }


def ensure_bytecode() -> None:
    """Compile what the processes import (Coretsia's and Huey's) when no fresh .pyc exists.

    Without it, under ``PYTHONDONTWRITEBYTECODE=1`` and an installer that does not compile,
    every worker would compile its modules at every start (see docs/performance.md).
    """
    import compileall

    import huey

    run_path = str(BENCH / "run.py")
    spec = importlib.util.spec_from_file_location("bench_run", run_path)
    assert spec is not None
    assert spec.loader is not None
    sys.path.append(str(BENCH))  # run.py imports bench_app beside it
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    module.ensure_bytecode()
    compileall.compile_dir(os.path.dirname(huey.__file__), quiet=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--sizes", default="1,2,4", help="worker counts (default 1,2,4)")
    parser.add_argument("--only", default="", help="throughput,io,soak,two-pools")
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
    parts = set(filter(None, args.only.split(","))) or {"throughput", "io"}
    if args.soak:
        parts |= {"soak", "two-pools"}
    unknown = parts - {"throughput", "io", "soak", "two-pools"}
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    sizes = [int(n) for n in args.sizes.split(",")]

    started = datetime.datetime.now(datetime.timezone.utc)
    results = Results(started.isoformat(timespec="seconds"), machine(), args.runs)
    results.data["load_average_before"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    ensure_bytecode()
    clock = time.monotonic()
    try:
        if parts & {"throughput", "io"}:
            log("warm-up (discarded): 200 tasks on each side")
            warm = _one_run("coretsia", 1, 200, "noop")
            sync = args.huey_synchronous
            if sync == "match":
                used = {_SYNC.get(p.split()[-1], "") for p in warm["worker_pragmas"]}
                sync = used.pop() if len(used) == 1 and used <= {"FULL", "NORMAL"} else "FULL"
                results.notes.append(
                    f"Huey's synchronous: {sync}, matching Coretsia's workers"
                    if warm["worker_pragmas"]
                    else "Huey's synchronous: FULL (Coretsia's workers could not be probed)"
                )
            os.environ["CQ_HUEY_SYNCHRONOUS"] = sync
            _one_run("huey", 1, 200, "noop")
        if "throughput" in parts:
            throughput(results, sizes, args.tasks, args.runs)
        if "io" in parts:
            io_bound(results, args.runs)
        if "soak" in parts:
            soak(results, args.soak_tasks)
        if "two-pools" in parts:
            two_pools(results, PAIR_TASKS)
    finally:
        cleanup()
    results.data["load_average_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
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
    RESULTS.mkdir(exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"queue-{stamp}.json").write_text(json.dumps(results.__dict__, indent=2) + "\n")
    (RESULTS / f"queue-{stamp}.md").write_text(text + "\n")
    print(text)
    return 0


_SYNC = {"0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"}


def _pragmas(pair: str) -> str:
    journal, _, sync = pair.partition(" ")
    return f"journal_mode={journal}, synchronous={_SYNC.get(sync, sync)}"


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
        f"{'; '.join(map(_pragmas, sorted(coretsia))) or 'not probed'} (a lease and an ack "
        "per task, at least once; enqueue always FULL); Huey "
        f"{'; '.join(map(_pragmas, sorted(huey))) or 'not run'} (the row is deleted at "
        "dequeue: one commit per task, at most once)."
    ]


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on TERM too
    sys.exit(main())
