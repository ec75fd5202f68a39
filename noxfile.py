"""Developer and CI sessions for the Coretsia Worker monorepo.

Run with the nox that ``bin/setup`` installs: ``.venv/bin/nox`` (default: tests, lint,
typecheck), or ``.venv/bin/nox -s build`` / ``-s manpages`` / ``-s bench`` /
``-s bench_queue`` / ``-s bench_peers`` / ``-s container``.

Every session installs from ``uv.lock`` (``uv sync --locked``), so a session sees exactly
the versions the developer environment and CI see, and a stale lock fails loudly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
DISTRIBUTIONS = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))

# Only package registries are reachable from this project's machines: uv must never try to
# download an interpreter when one is missing (it would fail with a DNS error instead of a
# clear "not found"). The sessions' subprocesses inherit this.
os.environ["UV_PYTHON_DOWNLOADS"] = "never"

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.download_python = "never"
nox.options.sessions = ["tests", "lint", "typecheck"]

SUPPORTED_PYTHONS = ("3.10", "3.11", "3.12", "3.13")


def _runs_as(executable: str, version: str) -> bool:
    """True if ``executable`` starts and is CPython ``version`` (pyenv shims may refuse)."""
    probe = "import platform, sys; print(platform.python_implementation(), *sys.version_info[:2])"
    try:
        out = subprocess.run(
            [executable, "-c", probe], capture_output=True, text=True, timeout=20, check=False
        )
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.split() == ["CPython", *version.split(".")]


def _find_interpreter(version: str) -> str | None:
    """The first working CPython ``version``: pyenv's version dirs first, then PATH."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    installed = sorted(
        pyenv_root.glob(f"versions/{version}.*/bin/python{version}"),
        key=lambda p: [int(x) if x.isdigit() else -1 for x in p.parts[-3].split(".")],
        reverse=True,
    )
    candidates = [str(p) for p in installed]
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    if "{}.{}".format(*sys.version_info[:2]) == version:
        candidates.append(sys.executable)
    return next((c for c in candidates if _runs_as(c, version)), None)


def _available_pythons() -> list[str]:
    """The supported versions present here; each found one's directory goes first on PATH.

    nox errors on a missing interpreter under ``CI=true``, so the parametrization lists only
    what exists: a missing version is reported and skipped, never a failure. Putting the
    found binary's directory first on PATH makes nox pick that binary and not a pyenv shim
    that refuses to run.
    """
    found: list[str] = []
    for version in SUPPORTED_PYTHONS:
        executable = _find_interpreter(version)
        if executable is None:
            print(f"noxfile: CPython {version} not found; tests-{version} skipped", file=sys.stderr)
            continue
        found.append(version)
        os.environ["PATH"] = os.pathsep.join((str(Path(executable).parent), os.environ["PATH"]))
    return found


PYTHONS = _available_pythons()


def _sync(session: nox.Session, *extra: str) -> None:
    """Install the locked environment into the session's virtualenv with uv."""
    location = session.virtualenv.location
    session.run_install(
        "uv",
        "sync",
        "--locked",
        "--quiet",
        f"--python={location}",
        *extra,
        env={"UV_PROJECT_ENVIRONMENT": location},
    )


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the test suite on every supported CPython found on this machine."""
    _sync(session, "--all-packages")
    # pytest's exit 5 (no tests collected) is not in success_codes, so it fails the session.
    session.run("python", "-m", "pytest", *session.posargs)


def _existing(*paths: str) -> list[str]:
    return [p for p in paths if (ROOT / p).exists()]


def _passes(session: nox.Session, *args: str) -> bool:
    """Run a command; report failure as False instead of ending the session."""
    try:
        session.run(*args)
    except nox.command.CommandFailed:
        return False
    return True


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check over the repo's Python (both run, then report)."""
    _sync(session, "--only-group", "lint")
    targets = _existing(
        "packages", "tests", "noxfile.py", "bin/set-version", "bench", "docs/examples", "typings"
    )
    checks = {"ruff check": ("check",), "ruff format --check": ("format", "--check")}
    failed = [
        name for name, args in checks.items() if not _passes(session, "ruff", *args, *targets)
    ]
    if failed:
        session.error(f"failed: {', '.join(failed)}")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over every packages/*/src and bench/, then the tests' profile over tests/.

    Both read the root pyproject config: the packages, the benchmarks and tests/support's
    helpers are strict; the tests and the test applications check every body with relaxed
    annotation rules (its ``[[tool.mypy.overrides]]``).
    """
    _sync(session, "--all-packages")
    session.run("mypy", *session.posargs)
    session.run("mypy", "tests")


def _sub_package(distribution: str) -> str:
    """coretsia-worker-protocol -> worker_protocol (the import package under coretsia)."""
    return distribution.removeprefix("coretsia-").replace("-", "_")


def _distribution(wheel: Path) -> str:
    """coretsia_worker_protocol-0.1.0-py3-none-any.whl -> coretsia-worker-protocol."""
    return wheel.name.split("-")[0].replace("_", "-")


def _extras(wheel: Path) -> list[str]:
    """The extras a wheel declares (``Provides-Extra`` in its metadata)."""
    with zipfile.ZipFile(wheel) as zf:
        metadata = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        lines = zf.read(metadata).decode("utf-8").splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Provides-Extra:")]


def _check_wheel(wheel: Path) -> None:
    """The wheel holds only its own sub-package of the coretsia namespace."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    if "coretsia/__init__.py" in names:
        raise ValueError(f"{wheel.name} ships coretsia/__init__.py (breaks the namespace)")
    sub = _sub_package(_distribution(wheel))
    stray = [
        n
        for n in names
        if not n.startswith(f"coretsia/{sub}/") and ".dist-info/" not in n and ".data/" not in n
    ]
    if stray:
        raise ValueError(f"{wheel.name} ships files outside coretsia/{sub}/: {stray}")


@nox.session
def build(session: nox.Session) -> None:
    """Build every distribution into dist/ and prove each wheel installs and imports alone."""
    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run("uv", "build", "--all-packages", "--quiet", "--out-dir", str(dist))
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if len(wheels) != len(DISTRIBUTIONS) or len(sdists) != len(DISTRIBUTIONS):
        session.error(f"expected a wheel and an sdist for each of {DISTRIBUTIONS}, got {wheels}")
    for wheel in wheels:
        _check_wheel(wheel)

    # Siblings must come from dist/, never from an index that might hold a same-named project:
    # the constraints pin each sibling to its freshly built wheel (constraints install nothing
    # by themselves, so each wheel still gets only what it declares).
    python = str(Path(session.virtualenv.location) / "bin" / "python")
    with tempfile.TemporaryDirectory(prefix="coretsia-wheel-") as tmp:
        constraints = Path(tmp) / "siblings-constraints.txt"
        constraints.write_text(
            "".join(f"{_distribution(w)} @ {w.as_uri()}\n" for w in wheels), encoding="utf-8"
        )
        for wheel in wheels:
            distribution = _distribution(wheel)
            sub = _sub_package(distribution)
            venv = Path(tmp) / distribution
            session.run("uv", "venv", "--quiet", "--python", python, str(venv))
            extras = ",".join(_extras(wheel))
            session.run(
                "uv", "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                "--find-links", str(dist), "--constraint", str(constraints),
                f"{wheel}[{extras}]" if extras else str(wheel),
            )  # fmt: skip
            # Import every module (entry points and Windows-only code aside), with the
            # wheel's declared extras (the protocol's `runtime` channel needs trio): an
            # import of a package the wheel does not declare fails here, not in production.
            check = (
                f"import importlib, pkgutil, coretsia.{sub} as p\n"
                "names = [m.name for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.')]\n"
                "(home,) = [name for name in names if name.endswith('._version')]\n"
                "v = importlib.import_module(home)\n"
                f"assert v.__version__ == {VERSION!r}, v.__version__\n"
                "skip = ('.__main__', '._windows')\n"
                "for name in names:\n"
                "    if not name.endswith(skip): importlib.import_module(name)\n"
                f"print('{distribution}: imports alone,', len(names), 'modules, version',"
                " v.__version__)"
            )
            session.run(str(venv / "bin" / "python"), "-c", check, external=True)


@nox.session
def container(session: nox.Session) -> None:
    """The container path run for real (bench/container.py); not a default, needs root.

    Installs what is missing with ``bin/container-deps`` (docker.io, debootstrap), then
    builds docs/deploy/Dockerfile and checks the pool in it: PID 1, the probes through
    ``docker exec``, ``docker stop``, a SIGKILL of the supervisor inside and ``docker
    kill``; see docs/deploy/kubernetes.md. Skipped, with the reason, where no Docker engine
    can run. Arguments after ``--`` go to bench/container.py (``--base local``).
    """
    try:
        session.run(str(ROOT / "bin" / "container-deps"), external=True)
    except nox.command.CommandFailed:
        session.warn("container: bin/container-deps installed nothing; using what is here")
    _sync(session, "--all-packages")
    outcome = Path(session.create_tmp()) / "container-outcome.json"
    script = str(ROOT / "bench" / "container.py")
    session.run("python", script, "--outcome", str(outcome), *session.posargs)
    result = json.loads(outcome.read_text(encoding="utf-8"))
    if result["outcome"] == "skipped":
        session.skip(f"no Docker engine can run here ({result['reason']})")


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark (bench/run.py): real pools against a bare-Python floor; not a default.

    Prints the table and writes bench/results/<timestamp>.{json,md}; budgets and the reasons
    behind any miss are in docs/performance.md. Arguments after ``--`` go to bench/run.py
    (``--runs 5``, ``--no-1024``, ``--quick``, ``--only s3,s6``, ``--wait-idle 600``).
    """
    _sync(session, "--all-packages")
    session.run("python", str(ROOT / "bench" / "run.py"), *session.posargs)


@nox.session
def lives(session: nox.Session) -> None:
    """The full stress test of worker lives (tests/lifecycle/test_lifecycle_lives.py):
    1,700 lives per mode, over 5,000 in all; not a default (several minutes).

    ``CORETSIA_TEST_LIVES`` in the environment sets another count per mode.
    """
    _sync(session, "--all-packages")
    count = os.environ.get("CORETSIA_TEST_LIVES", "1700")
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/lifecycle/test_lifecycle_lives.py",
        "-q",
        *session.posargs,
        env={"CORETSIA_TEST_LIVES": count},
    )


@nox.session
def bench_queue(session: nox.Session) -> None:
    """The queue benchmark (bench/pipeline.py): Coretsia's SQLite pipeline beside Huey's.

    Syncs the ``bench`` dependency group too (Huey). Prints the table and writes
    bench/results/queue-<timestamp>.{json,md}; see docs/performance.md. Arguments after
    ``--`` go to bench/pipeline.py (``--runs 5``, ``--sizes 1,4``, ``--tasks 1000``,
    ``--soak``, ``--only soak --soak-tasks 2000``, ``--huey-synchronous FULL``).
    """
    _sync(session, "--all-packages", "--group", "bench")
    session.run("python", str(ROOT / "bench" / "pipeline.py"), *session.posargs)


@nox.session
def bench_peers(session: nox.Session) -> None:
    """The peers' benchmark (bench/peers.py): the same idle workers under each peer.

    Syncs the ``peers`` dependency group too (supervisord, circus, gunicorn, honcho).
    Prints the issue's table and writes bench/results/peers-<timestamp>.{json,md}; see
    docs/performance.md. Arguments after ``--`` go to bench/peers.py (``--quick``,
    ``--runs 5``, ``--sizes 8,64``, ``--spawn exec``, ``--only start,control``).
    """
    _sync(session, "--all-packages", "--group", "peers")
    session.run("python", str(ROOT / "bench" / "peers.py"), *session.posargs)


@nox.session
def bench_pg(session: nox.Session) -> None:
    """The PostgreSQL queue benchmark (bench/pg_queue.py): the postgres source beside the
    sqlite source and procrastinate, on a server it starts (Debian's postgresql binaries).

    Syncs the ``bench`` dependency group too (procrastinate). Prints the table and writes
    bench/results/pg-queue-<timestamp>.{json,md}. Arguments after ``--`` go to the script
    (``--runs 1``, ``--sizes 1,4``, ``--tasks 500``).
    """
    _sync(session, "--all-packages", "--group", "bench")
    session.run("python", str(ROOT / "bench" / "pg_queue.py"), *session.posargs)


@nox.session
def manpages(session: nox.Session) -> None:
    """Generate man/coretsia-supervisor.1, coretsia-queue.1 and coretsia-sqlite-queue.1 from
    the commands' own argparse parsers."""
    _sync(session, "--all-packages")
    (ROOT / "man").mkdir(exist_ok=True)
    # A fixed date makes the page reproducible: the last commit's time, else VERSION's mtime.
    epoch = (
        os.environ.get("SOURCE_DATE_EPOCH")
        or subprocess.run(
            ["git", "log", "-1", "--format=%ct"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    )
    epoch = epoch or str(int((ROOT / "VERSION").stat().st_mtime))
    session.run(
        "argparse-manpage",
        "--module", "coretsia.supervisor.parser",
        "--function", "build_parser",
        "--prog", "coretsia-supervisor",
        "--project-name", "Coretsia Worker",
        "--version", VERSION,
        "--description", "run and operate a supervised pool of long-lived Python workers",
        "--manual-title", "Coretsia Worker Manual",
        "--output", str(ROOT / "man" / "coretsia-supervisor.1"),
        env={"SOURCE_DATE_EPOCH": epoch},
    )  # fmt: skip
    for prog, function, summary in (
        ("coretsia-queue", "queue_parser", "operate a Coretsia queue, SQLite or PostgreSQL"),
        ("coretsia-sqlite-queue", "sqlite_parser", "deprecated alias of coretsia-queue for SQLite"),
    ):
        session.run(
            "argparse-manpage",
            "--module", "coretsia.sources._queue_parser",
            "--function", function,
            "--prog", prog,
            "--project-name", "Coretsia Worker",
            "--version", VERSION,
            "--description", summary,
            "--manual-title", "Coretsia Worker Manual",
            "--output", str(ROOT / "man" / f"{prog}.1"),
            env={"SOURCE_DATE_EPOCH": epoch},
        )  # fmt: skip
