"""Many short worker lives, each ended at a point it chose: every exit judged as caused.

A pool of process entries (``apps/lives_app.py``) whose workers end before ``ready``,
right after it, in the middle of a frame or in the middle of a task, by ``exit 0``, a
non-zero exit or SIGKILL, drawn at random; each writes down how before it goes. The
supervisor's log must tell each life's story back exactly: its ``worker.ready`` if and
only if it got ready, its ``worker.exited`` with the exit kind it chose (``mid_frame``
when it died writing a frame), and a replacement rather than a failure. The pool runs
once per mode (each driver, and the fork server).

``CORETSIA_TEST_LIVES`` sets the lives per mode (default 60; ``nox -s lives`` runs 1,700
per mode, over 5,000 in all).
"""

from __future__ import annotations

import collections
import os
import textwrap
from pathlib import Path
from typing import Any

import pools
import pytest

LIVES = int(os.environ.get("CORETSIA_TEST_LIVES", "60"))
SLOTS = 8
WAIT_S = 60 + LIVES * 0.25


@pytest.mark.slow
def test_every_exit_is_judged_as_the_worker_caused_it(
    root: Path, supervisors: pools.Supervisors
) -> None:
    pools.write_root(root, workers=0, task_source=None, respawn_interval_ms=10)
    with (root / "coretsia.toml").open("a") as config:
        config.write(
            textwrap.dedent(
                f"""
                [[process]]
                target = "lives_app:life"
                workers = {SLOTS}
                """
            )
        )
    pools.install_app(root, "lives_app.py")
    supervisor = supervisors(root, env={**os.environ, "LIVES": str(LIVES)})
    supervisor.wait_running(timeout=WAIT_S)
    assert supervisor.finish(timeout=WAIT_S) == 0, supervisor.stderr[-2000:]

    chosen: dict[int, list[tuple[str, str]]] = collections.defaultdict(list)
    for line in (root / "lives.log").read_text().splitlines():
        index, _pid, where, kind = line.split()
        chosen[int(index)].append((where, kind))
    told = _stories(supervisor.logs)
    misjudged = []
    for slot, lives in chosen.items():
        for (where, kind), story in zip(lives, told[slot], strict=False):
            ready, exited = story
            expected = (where != "before-ready", kind, where == "mid-frame")
            if (ready, exited["exit_kind"], exited.get("mid_frame", False)) != expected:
                misjudged.append((slot, where, kind, story))
        assert len(told[slot]) in (len(lives), len(lives) + 1)  # then the stop's own exit
    assert misjudged == []
    assert sum(len(lives) for lives in chosen.values()) == LIVES
    replaced = sum(1 for line in supervisor.logs if line["event"] == "worker.replaced")
    assert LIVES - SLOTS <= replaced <= LIVES  # those that ended as the stop began are not


def _stories(logs: list[dict[str, Any]]) -> dict[int, list[tuple[bool, dict[str, Any]]]]:
    """Per slot, per life: whether it was ready, and its ``worker.exited`` line."""
    stories: dict[int, list[tuple[bool, dict[str, Any]]]] = collections.defaultdict(list)
    ready: set[int] = set()
    for line in logs:
        if line["event"] == "worker.ready":
            ready.add(line["slot"])
        elif line["event"] == "worker.exited":
            stories[line["slot"]].append((line["slot"] in ready, line))
            ready.discard(line["slot"])
    return stories
