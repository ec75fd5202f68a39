"""The pool benchmark's table: medians, ratios to the floor, budgets, pass or fail."""

from __future__ import annotations

from harness.results import Results, median

from pool_bench.pools import MIB
from pool_bench.start import BIG, START_SIZES


def _get(results: Results, key: str) -> float:
    value = results.data.get(key)
    if isinstance(value, list):
        return median([float(v) for v in value])
    if isinstance(value, (int, float)):
        return float(value)
    return float("nan")


def _count(results: Results, key: str) -> int:
    value = results.data.get(key)
    return len(value) if isinstance(value, list) else 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class _Table:
    """Rows of the report: scenario, median, floor or reference, ratio, budget, verdict."""

    HEADER = ("scenario", "median", "floor / reference", "ratio", "budget", "verdict")

    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def add(
        self,
        name: str,
        value: str,
        *,
        floor: str = "",
        ratio: float | None = None,
        budget: str = "",
        ok: bool | None = None,
        detail: str = "",
    ) -> None:
        verdict = "" if ok is None else ("pass" if ok else "**FAIL**")
        if detail:
            verdict = f"{verdict} ({detail})" if verdict else detail
        shown_ratio = "" if ratio is None else f"{ratio:.2f}"
        self.rows.append((name, value, floor, shown_ratio, budget, verdict))

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.HEADER) + " |", "|" + "---|" * len(self.HEADER)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def _start_rows(results: Results, out: _Table) -> None:
    for n in (*START_SIZES, BIG):
        if f"floor_start_{n}" not in results.data:
            continue
        s1, floor = _get(results, f"s1_{n}"), _get(results, f"floor_start_{n}")
        if n == BIG:
            rss = _get(results, f"s1_supervisor_rss_mib_{n}")
            completes = bool(results.data.get(f"s1_{n}"))
            out.add(
                f"S1 start, N={n} (once)", _ms(s1), floor=_ms(floor), ratio=s1 / floor,
                budget="completes; supervisor RSS <= 80 MB (76.3 MiB)",
                ok=completes and rss * MIB <= 80e6, detail=f"RSS {rss:.1f} MiB",
            )  # fmt: skip
            continue
        limit = 1.10 * floor + 0.20
        out.add(
            f"S1 start, N={n}", _ms(s1), floor=_ms(floor), ratio=s1 / floor,
            budget=f"<= 1.10 x floor + 0.20 s = {_ms(limit)}", ok=s1 <= limit,
        )  # fmt: skip
        out.add(
            f"S1 supervisor+guardian CPU by running, N={n}",
            _ms(_get(results, f"s1_daemon_cpu_s_{n}")), detail="explains S1",
        )  # fmt: skip
    if "s2_64" in results.data:
        s2, floor = _get(results, "s2_64"), _get(results, "floor_stop_64")
        limit = 1.25 * floor + 0.05
        survivors = _count(results, "s2_survivors")
        out.add(
            "S2 stop, N=64", _ms(s2), floor=_ms(floor), ratio=s2 / floor,
            budget=f"<= 1.25 x floor + 0.05 s = {_ms(limit)}",
            ok=s2 <= limit and not survivors, detail=f"{survivors} survivors",
        )  # fmt: skip


def _lifecycle_rows(results: Results, out: _Table) -> None:
    if "s3" in results.data:
        s3, floor = _get(results, "s3"), _get(results, "floor_spawn")
        limit = floor + 0.025
        out.add(
            "S3 recycle, exit to ready", _ms(s3), floor=f"{_ms(floor)} (spawn to ready)",
            ratio=s3 / floor, budget=f"<= floor + 25 ms = {_ms(limit)}", ok=s3 <= limit,
        )  # fmt: skip
    if "boot_launcher_ready" in results.data:
        boot, floor = _get(results, "boot_launcher_ready"), _get(results, "boot_floor_spawn")
        out.add(
            "launcher alone, spawn to ready", _ms(boot), floor=f"{_ms(floor)} (spawn to ready)",
            ratio=boot / floor, detail="explains S1, S3",
        )  # fmt: skip
        out.add(
            "launcher alone, stop to reaped", _ms(_get(results, "boot_launcher_stop")),
            detail="explains S2",
        )  # fmt: skip
        out.add(
            "launcher alone, CPU per life", _ms(_get(results, "boot_launcher_cpu")),
            floor=f"{_ms(_get(results, 'boot_floor_cpu'))} (minimal worker)",
            ratio=_get(results, "boot_launcher_cpu") / _get(results, "boot_floor_cpu"),
        )  # fmt: skip
    if "s4" in results.data:
        s4 = _get(results, "s4")
        survivors = _count(results, "s4_survivors")
        out.add(
            "S4 SIGKILL supervisor, N=64", _ms(s4), budget="<= 500 ms, zero survivors",
            ok=s4 <= 0.5 and not survivors, detail=f"{survivors} survivors",
        )  # fmt: skip


def _idle_rows(results: Results, out: _Table) -> None:
    for driver in ("fork", "proc"):
        prefix = f"s5_{driver}"
        if f"{prefix}_cpu_s_per_10s" not in results.data:
            continue
        cpu = _get(results, f"{prefix}_cpu_s_per_10s")
        sched = _get(results, f"{prefix}_sched_cpu_s_per_10s")
        wake = _get(results, f"{prefix}_wakeups_per_s")
        daemons = "supervisor+guardian" + ("+proc host" if driver == "proc" else "")
        out.add(
            f"S5 idle CPU, {daemons} ({driver})", f"{cpu:.3f} CPU-s / 10 s",
            floor=f"per-thread sched: {sched:.5f} CPU-s", budget="<= 0.01 CPU-s / 10 s",
            ok=cpu <= 0.01 and sched <= 0.01,
        )  # fmt: skip
        out.add(f"S5 idle wake-ups ({driver})", f"{wake:.2f} /s", budget="<= 1 /s", ok=wake <= 1)
        rss = results.data[f"{prefix}_rss_mib"]
        assert isinstance(rss, dict)
        for name, value in rss.items():
            limit = {"supervisor": 30, "guardian": 25}.get(name)
            out.add(
                f"S5 {name} RSS ({driver})", f"{value:.1f} MiB",
                budget="" if limit is None else f"<= {limit} MiB",
                ok=None if limit is None else value <= limit,
            )  # fmt: skip
        worker = _get(results, f"{prefix}_worker_rss_mib")
        bare = _get(results, f"{prefix}_bare_rss_mib")
        uss = _get(results, f"{prefix}_worker_uss_mib")
        bare_uss = _get(results, f"{prefix}_bare_uss_mib")
        out.add(
            f"S5 launcher RSS ({driver})", f"{worker:.1f} MiB (USS {uss:.1f})",
            floor=f"bare {bare:.1f} MiB (USS {bare_uss:.1f})", budget="<= bare + 3 MiB",
            ok=worker - bare <= 3, detail=f"+{worker - bare:.1f} MiB",
        )  # fmt: skip


def _control_rows(results: Results, out: _Table) -> None:
    if "s6_status_process" in results.data:
        status, bare = _get(results, "s6_status_process"), _get(results, "s6_python_pass")
        out.add(
            "S6 `status` process", _ms(status), floor=f"{_ms(bare)} (`python -c pass`)",
            ratio=status / bare, budget="<= 3 x `python -c pass`", ok=status <= 3 * bare,
        )  # fmt: skip
        client = _get(results, "s6_client_status")
        out.add(
            "S6 ControlClient.status()", f"{client * 1e6:.0f} us", budget="<= 1 ms",
            ok=client <= 0.001,
        )  # fmt: skip
    if "s7_work_overhead" in results.data:
        bare = _get(results, "s7_bare_per_task")
        for key, name in (("s7_run_unit_overhead", "run_unit"), ("s7_work_overhead", "work")):
            over = _get(results, key)
            out.add(
                f"S7 {name}, per task over the bare loop", f"+{over * 1e6:.2f} us",
                floor=f"bare loop {bare * 1e6:.3f} us/task", budget="<= 20 us",
                ok=over <= 20e-6,
            )  # fmt: skip
        if "s7_run_unit_telemetry_overhead" in results.data:
            over = _get(results, "s7_run_unit_telemetry_overhead")
            out.add(
                "S7 run_unit with telemetry on (SDK, in-memory export)",
                f"+{over * 1e6:.2f} us", detail="reported, no budget",
            )  # fmt: skip


def table(results: Results) -> str:
    """The markdown table: medians, ratios to the floor, budgets, pass or fail."""
    out = _Table()
    _start_rows(results, out)
    _lifecycle_rows(results, out)
    _idle_rows(results, out)
    _control_rows(results, out)
    return out.markdown()
