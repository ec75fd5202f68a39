"""The peers' table, as the issue shows it: one column per side, medians, the best in bold.

Lower is better in every row; the best value among the sides other than the floor is in
bold. A side that cannot do what a row measures shows ``none`` (honcho replaces no
worker) or ``—`` (nothing to measure: the floor has no supervisor to ask); a spawn mode
the installed Coretsia does not accept shows ``n/a`` in every row.
"""

from __future__ import annotations

from harness.results import Results, median
from pool_bench.pools import STOP_N

from peer_bench.scenarios import CONTAINMENT_WAIT_S, QUICKSTART_N

FLOOR = "floor (bare Popen)"


def _rows(sizes: tuple[int, ...]) -> list[tuple[str, str, str]]:
    """(label, figure key, unit) of each row."""
    rows = [(f"start → all ready, N={n} (s)", f"start_{n}", "s") for n in sizes]
    first = sizes[0]
    rows += [
        (f"first worker ready after launch, N={first} (s)", f"first_ready_{first}", "s"),
        (f"CPU of the whole tree until all ready, N={first} (ms)", f"start_cpu_ms_{first}", "ms"),
        (f"graceful stop, N={STOP_N} (s)", f"stop_{STOP_N}", "s"),
        ("respawn after a worker dies (s)", "respawn", "s"),
        (
            f"workers alive {CONTAINMENT_WAIT_S:.0f} s after supervisor SIGKILL, N={STOP_N}",
            f"alive_after_kill_{STOP_N}",
            "count",
        ),
        (f"total PSS of the pool, N={STOP_N} (MiB)", f"pss_mib_{STOP_N}", "MiB"),
        ("`status` as a process (s)", "status", "s"),
        (
            f"quick start's task workers, {QUICKSTART_N} ready (s)",
            f"quickstart_{QUICKSTART_N}",
            "s",
        ),
    ]
    return rows


def _shown(value: float, unit: str) -> str:
    if unit in ("count", "MiB", "ms"):
        return f"{value:.0f}"
    return f"{value:.3f}" if value < 0.1 else f"{value:.2f}"


def _absent(side: str, key: str) -> str:
    if key == "respawn" and side.startswith("honcho"):
        return "none"
    return "—"


def table(results: Results, sides: list[str], missing: list[str], sizes: tuple[int, ...]) -> str:
    """The markdown table: sides in ``sides`` order, then each missing spawn mode as n/a."""
    data = results.data.get("peers", {})
    assert isinstance(data, dict)
    columns = [*sides, *(f"Coretsia ({mode})" for mode in missing)]
    lines = [
        "| figure | " + " | ".join(columns) + " |",
        "| --- |" + " --- |" * len(columns),
    ]
    for label, key, unit in _rows(sizes):
        values = {s: median(data[s][key]) for s in sides if data.get(s, {}).get(key)}
        if not values:
            continue
        peers = [v for s, v in values.items() if s != FLOOR]
        best = min(peers) if peers else None
        cells = []
        for side in columns:
            if side not in sides:
                cells.append("n/a")
            elif side not in values:
                cells.append(_absent(side, key))
            else:
                shown = _shown(values[side], unit)
                cells.append(f"**{shown}**" if side != FLOOR and values[side] == best else shown)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
