"""The container path, run for real: build docs/deploy/Dockerfile, run it, check the pool.

Run it with ``.venv/bin/nox -s container`` (which first installs what is missing with
``bin/container-deps``), or ``python bench/container.py`` as root in an environment that
has the workspace. Steps, each timed (the table at the end):

1. A Docker engine: ``$DOCKER_HOST``'s or the system's if one answers, else a ``dockerd``
   started here with no network of its own, stopped at the end (``container_check.engine``).
2. The base image: ``python:3.12-slim`` if the engine has it or can pull it, else a local
   one made with debootstrap and kept under a tag for the next run (``--base``;
   ``container_check.images``).
3. The wheels (``uv build``) and the image (``docker build``), as ``docs/deploy`` shows.
4. The checks (``container_check.scenarios``), each in a fresh container run with
   ``--network none``.

Everything it started is removed at the end: the containers, the image (the base stays),
and the engine if it started it. Where no engine can run, it says why and writes
``skipped`` to ``--outcome`` (the nox session turns that into a skip). Exit 0 passed or
skipped, 1 failed.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from container_check import REPO
from container_check.commands import DIST
from container_check.engine import Engine, find_or_start
from container_check.errors import ContainerCheckError, EngineUnavailable
from container_check.images import build_image, build_wheels, choose_base
from container_check.scenarios import Row, Runner

T = TypeVar("T")


def _timed(rows: list[Row], step: str, action: Callable[[], T], result: str = "ok") -> T:
    began = time.monotonic()
    value = action()
    rows.append(Row(step, time.monotonic() - began, result))
    return value


def _table(rows: list[Row]) -> str:
    width = max(len(row.step) for row in rows)
    lines = [f"{'step':<{width}}  {'seconds':>8}  result", "-" * (width + 28)]
    lines += [f"{row.step:<{width}}  {row.seconds:8.2f}  {row.result}" for row in rows]
    return "\n".join(lines)


def _uv() -> str:
    """The uv of this environment (the dev group has it), else the one on PATH."""
    here = shutil.which("uv", path=str(Path(sys.executable).parent))
    return here or shutil.which("uv") or "uv"


def _check(engine: Engine, base_mode: str, rows: list[Row]) -> None:
    docker = engine.docker
    token = secrets.token_hex(4)
    image = f"coretsia-check:{token}"
    began = time.monotonic()
    base, how = choose_base(docker, base_mode)
    rows.append(Row(f"base image ({how})", time.monotonic() - began, base))
    _timed(rows, "wheels (uv build)", lambda: build_wheels(_uv()))
    runner = Runner(docker, image, token)
    try:
        _timed(rows, "image (docker build)", lambda: build_image(docker, base, image))
        rows += runner.graceful_stop()
        rows += runner.supervisor_kill()
        rows += runner.docker_kill()
    finally:
        runner.remove_all()
        docker.run(("docker", "image", "rm", "-f", image), timeout=120, token="rmi", check=False)
        if engine.ours:  # our data root: a failed build's dangling layers are ours too
            docker.run(("docker", "image", "prune", "-f"), timeout=300, token="prune", check=False)
        shutil.rmtree(REPO / DIST, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--base", choices=("auto", "public", "local"), default="auto")
    parser.add_argument("--outcome", type=Path, help="write the outcome here, as JSON")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # ours in order with the children's
    rows: list[Row] = []
    outcome: dict[str, object] = {"outcome": "passed", "reason": None}
    try:
        engine = _timed(rows, "engine", find_or_start)
    except EngineUnavailable as exc:
        print(f"container: skipped: no Docker engine can run here ({exc.token})")
        outcome = {"outcome": "skipped", "reason": exc.token}
    else:
        try:
            how = "started here" if engine.ours else f"found at {engine.docker.host}"
            version = engine.docker.server_version()
            rows[-1] = Row("engine", rows[-1].seconds, f"{how}, {version}")
            _check(engine, args.base, rows)
        except ContainerCheckError as exc:
            outcome = {"outcome": "failed", "reason": exc.token}
        finally:
            _timed(rows, "engine stop", engine.stop, "stopped" if engine.ours else "left running")
        print(_table(rows))
        print(
            f"container: {outcome['outcome']}"
            + (f" ({outcome['reason']})" if outcome["reason"] else "")
        )
    if args.outcome is not None:
        outcome["steps"] = [row.__dict__ for row in rows]
        args.outcome.write_text(json.dumps(outcome, indent=2) + "\n", encoding="utf-8")
    return 1 if outcome["outcome"] == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
