"""The queue benchmark's tables, and the durability each side's connections really used."""

from __future__ import annotations

import statistics
from typing import Any, cast

from harness.results import Results, median

from queue_bench.records import SYNC
from queue_bench.throughput import IO_SLEEP_S, IO_TASKS, IO_WORKERS


def _part(results: Results, name: str) -> dict[str, Any]:
    """What a part stored: always a dict (``Results.data`` is typed for both benchmarks)."""
    return cast("dict[str, Any]", results.data.get(name, {}))


def _med(samples: list[dict[str, Any]], key: str) -> float:
    return median([float(s[key]) for s in samples])


def _verdict(ok: bool) -> str:
    return "pass" if ok else "**FAIL**"


def _stats_text(stats: dict[str, int]) -> str:
    return ", ".join(f"{name.replace('_', ' ')} {count:,}" for name, count in stats.items())


def table(results: Results) -> str:
    lines = []
    tp = _part(results, "throughput")
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
    io = _part(results, "io")
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
        lines += _soak_rows(_part(results, "soak"))
    if "two_pools" in results.data:
        lines += _pair_rows(_part(results, "two_pools"))
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


def durability_lines(results: Results) -> list[str]:
    """What each side's connections actually used, as read in this run."""
    coretsia: set[str] = set()
    huey: set[str] = set()
    for group in ("throughput", "io"):
        for key, samples in _part(results, group).items():
            for s in samples:
                if key.startswith("coretsia"):
                    coretsia.update(s.get("worker_pragmas", []))
                else:
                    huey.add(s["pragmas"])
    if "soak" in results.data:
        coretsia.update(_part(results, "soak").get("worker_pragmas", []))
    results.data["durability"] = {"coretsia_workers": sorted(coretsia), "huey": sorted(huey)}
    return [
        "Durability in force (read from the connections): Coretsia workers "
        f"{'; '.join(map(_pragmas, sorted(coretsia))) or 'not run'} (one commit per task: "
        "an ack and the next lease together, at least once; enqueue always FULL); Huey "
        f"{'; '.join(map(_pragmas, sorted(huey))) or 'not run'} (the row is deleted at "
        "dequeue: one commit per task, at most once)."
    ]


def p90(values: list[float]) -> float:
    """The 90th percentile (inclusive method: within the values' range)."""
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=10, method="inclusive")[-1]
