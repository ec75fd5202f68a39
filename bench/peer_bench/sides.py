"""The sides of the peers' benchmark: how each one is configured, launched, stopped, probed.

Each side writes its own configuration into a fresh project root for N workers, all of
them the floor's minimal worker (``floor.MINIMAL_WORKER``, reporting to ``ready.sock``),
except gunicorn's (forks of its arbiter, ``peer_gunicorn.py``) and Coretsia's (the
launcher running ``bench_app:reporting``), which report the same way. Settings are each
peer's defaults but for what running N copies of one command needs; the documentation
(``docs/performance.md``) lists them.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from floor import MINIMAL_WORKER
from harness import BENCH
from pool_bench.pools import PYTHON, SUPERVISOR, project_root

from coretsia.supervisor.config.loading import parse_config
from coretsia.worker_protocol.exceptions import WorkerConfigError
from peer_bench.readiness import READY_NAME

_BIN = Path(PYTHON).parent
_WORKER = [PYTHON, "-c", MINIMAL_WORKER, READY_NAME]
_WORKER_LINE = shlex.join(_WORKER)


class Side:
    """One peer: its root's files and command line, its graceful stop, its status probe."""

    name = ""
    respawns = True
    """Whether it replaces a worker that dies (honcho stops everything instead)."""

    def prepare(self, workers: int) -> tuple[Path, list[str]]:
        """A new project root for ``workers`` workers, and the command that runs them."""
        root = Path(tempfile.mkdtemp(prefix="cw-peer-"))
        return root, self.command(root, workers)

    def command(self, root: Path, workers: int) -> list[str]:
        raise NotImplementedError

    def stop(self, root: Path, proc: subprocess.Popen[bytes]) -> None:
        """Ask for a graceful stop (SIGTERM to the main process, unless said otherwise)."""
        proc.send_signal(signal.SIGTERM)

    def status(self, root: Path) -> list[str] | None:
        """The command that reports the pool's state, or None if the peer has none."""
        return None

    def has_status(self) -> bool:
        return self.status(Path("/")) is not None


class Floor(Side):
    """Bare ``subprocess.Popen`` of N workers (``floor.py serve``); no respawn, no status."""

    name = "floor (bare Popen)"
    respawns = False

    def command(self, root: Path, workers: int) -> list[str]:
        return [PYTHON, str(BENCH / "floor.py"), "serve", str(workers), READY_NAME]


class Supervisord(Side):
    name = "supervisord"

    def command(self, root: Path, workers: int) -> list[str]:
        (root / "supervisord.conf").write_text(
            "[supervisord]\nnodaemon = true\nlogfile = %(here)s/supervisord.log\n"
            "pidfile = %(here)s/supervisord.pid\nchildlogdir = %(here)s\n"
            "[unix_http_server]\nfile = %(here)s/supervisor.sock\n"
            "[rpcinterface:supervisor]\n"
            "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n"
            "[supervisorctl]\nserverurl = unix://%(here)s/supervisor.sock\n"
            f"[program:w]\ncommand = {_WORKER_LINE}\nnumprocs = {workers}\n"
            "process_name = %(program_name)s_%(process_num)d\ndirectory = %(here)s\n"
            "autorestart = true\n"
        )
        return [str(_BIN / "supervisord"), "-c", "supervisord.conf"]

    def status(self, root: Path) -> list[str] | None:
        return [str(_BIN / "supervisorctl"), "-c", str(root / "supervisord.conf"), "status"]


class Circus(Side):
    name = "circus"

    def command(self, root: Path, workers: int) -> list[str]:
        endpoints = {name: f"ipc://{root}/circus-{name}.sock" for name in ("ctl", "pub", "stats")}
        (root / "circus.ini").write_text(
            f"[circus]\nendpoint = {endpoints['ctl']}\npubsub_endpoint = {endpoints['pub']}\n"
            f"stats_endpoint = {endpoints['stats']}\n"
            f"[watcher:w]\ncmd = {_WORKER_LINE}\nnumprocesses = {workers}\n"
            f"working_dir = {root}\ncopy_env = true\n"
        )
        return [str(_BIN / "circusd"), "circus.ini"]

    def status(self, root: Path) -> list[str] | None:
        return [str(_BIN / "circusctl"), "--endpoint", f"ipc://{root}/circus-ctl.sock", "status"]


class Gunicorn(Side):
    """The sync worker, forked by the arbiter; a unix socket to listen on, nothing served."""

    name = "gunicorn"

    def command(self, root: Path, workers: int) -> list[str]:
        shutil.copy(BENCH / "peer_gunicorn.py", root / "peer_gunicorn.py")
        return [
            str(_BIN / "gunicorn"), "-c", "peer_gunicorn.py", "--workers", str(workers),
            "--bind", "unix:gunicorn.sock", "--control-socket", str(root / "gunicorn.ctl"),
            "--error-logfile", "gunicorn.log", "peer_gunicorn:app",
        ]  # fmt: skip

    def status(self, root: Path) -> list[str] | None:
        return [str(_BIN / "gunicornc"), "-s", str(root / "gunicorn.ctl"), "-c", "show workers"]


class Honcho(Side):
    """A Procfile of one process type, N of it; a worker's death stops them all."""

    name = "honcho"
    respawns = False

    def command(self, root: Path, workers: int) -> list[str]:
        (root / "Procfile").write_text(f"w: exec {_WORKER_LINE}\n")
        return [str(_BIN / "honcho"), "start", "-c", f"w={workers}"]


PRELOADED = "preload"
"""The mode of a third Coretsia column: the fork server with the application preloaded
(``[worker] preload``), as gunicorn's arbiter imports its application before it forks."""


def mode_settings(mode: str, app: list[str]) -> dict[str, object]:
    """The ``[worker]`` keys of a spawn mode (``exec``, ``forkserver`` or ``preload``);
    ``app``: the modules :data:`PRELOADED` preloads."""
    if mode == PRELOADED:
        return {"spawn": "forkserver", "preload": app}
    return {"spawn": mode}


def spawn_accepted(mode: str) -> bool:
    """Whether the installed configuration accepts the keys of ``mode``."""
    try:
        parse_config(mode_settings(mode, ["bench_app"]))
    except WorkerConfigError:
        return False
    return True


class Coretsia(Side):
    """``coretsia-supervisor start``: N task workers of ``bench_app:reporting``.

    ``spawn = mode`` is written only when the installed configuration accepts the key;
    without it (before the fork server), ``exec`` is what every worker does anyway.
    """

    def __init__(self, spawn: str) -> None:
        self.spawn = spawn
        self.name = f"Coretsia ({spawn})"
        self.settings = mode_settings(spawn, ["bench_app"]) if spawn_accepted(spawn) else {}

    def prepare(self, workers: int) -> tuple[Path, list[str]]:
        root = project_root(workers, task_source="bench_app:reporting", **self.settings)
        return root, self.command(root, workers)

    def command(self, root: Path, workers: int) -> list[str]:
        return [*SUPERVISOR, "start", "--root", str(root)]

    def stop(self, root: Path, proc: subprocess.Popen[bytes]) -> None:
        subprocess.run([*SUPERVISOR, "stop", "--root", str(root)], capture_output=True, check=True)

    def status(self, root: Path) -> list[str] | None:
        return [*SUPERVISOR, "status", "--root", str(root)]


PEERS: dict[str, type[Side]] = {
    "floor": Floor,
    "supervisord": Supervisord,
    "circus": Circus,
    "gunicorn": Gunicorn,
    "honcho": Honcho,
}


def sides(names: list[str], spawn_modes: list[str]) -> tuple[list[Side], list[str]]:
    """The sides to measure (``names``: keys of :data:`PEERS` and ``coretsia``), and the
    spawn modes the installed Coretsia does not accept.

    ``exec`` always runs (it is what Coretsia does without the key); another mode runs only
    where the configuration accepts it, and is reported as n/a otherwise.
    """
    chosen: list[Side] = [PEERS[name]() for name in PEERS if name in names]
    if "coretsia" not in names:
        return chosen, []
    missing = [m for m in spawn_modes if m != "exec" and not spawn_accepted(m)]
    chosen += [Coretsia(m) for m in spawn_modes if m not in missing]
    return chosen, missing
