"""Lazy exports: a package's public names are imported on first use, by one helper."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

PACKAGE = "cw_lazy_pkg"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A real package whose ``Thing`` lives in a submodule not imported with it."""
    directory = tmp_path / PACKAGE
    directory.mkdir()
    (directory / "__init__.py").write_text(
        textwrap.dedent(
            """
            from coretsia.worker_protocol._lazy import lazy_dir, lazy_getattr

            HOMES = {"parts.heavy": ("Thing",)}


            def __getattr__(name):
                return lazy_getattr(__name__, name, HOMES)


            def __dir__():
                return lazy_dir(__name__, HOMES)
            """
        )
    )
    (directory / "parts").mkdir()
    (directory / "parts" / "__init__.py").write_text("")
    (directory / "parts" / "heavy.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(PACKAGE)
    yield module
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]


def test_a_name_is_imported_on_first_use_and_then_kept(package: ModuleType) -> None:
    """The submodule loads at the first lookup; the value is stored on the package."""
    assert f"{PACKAGE}.parts.heavy" not in sys.modules
    thing = package.Thing
    assert thing is sys.modules[f"{PACKAGE}.parts.heavy"].Thing
    assert vars(package)["Thing"] is thing


def test_an_unknown_name_is_an_attribute_error(package: ModuleType) -> None:
    """The message is the one Python gives for a module without the attribute."""
    with pytest.raises(AttributeError, match=f"^module '{PACKAGE}' has no attribute 'Nope'$"):
        _ = package.Nope
    assert not hasattr(package, "Nope")


def test_dir_lists_names_not_yet_imported(package: ModuleType) -> None:
    """``dir()`` shows the exports before their submodules load, with the real globals."""
    names = dir(package)
    assert "Thing" in names
    assert "HOMES" in names
    assert f"{PACKAGE}.parts.heavy" not in sys.modules


@pytest.mark.parametrize(
    "package_name",
    ["coretsia.worker_protocol", "coretsia.supervisor", "coretsia.supervisor.process"],
)
def test_every_package_export_resolves(package_name: str) -> None:
    """Each name a package lists in ``__all__`` is found where its exports say."""
    module = __import__(package_name, fromlist=["__all__"])
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))


def test_the_helper_costs_the_hot_paths_nothing() -> None:
    """Importing submodules and a package-level lookup load neither typing nor importlib
    (the helper itself imports nothing)."""
    code = (
        "import sys\n"
        "import coretsia.worker_protocol.framing, coretsia.supervisor.worker_side.launcher\n"
        "import coretsia.supervisor.process_entries.errors, coretsia.supervisor.process\n"
        "coretsia.worker_protocol.Need, coretsia.supervisor.process.ProcessError\n"
        "print(sorted(m for m in ('typing', 'importlib') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "[]\n", "")
