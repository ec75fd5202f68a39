"""Discovery of ``@process`` declarations from real modules on a temporary sys.path: the
entries it registers, what it builds (and never runs), and what it refuses before building.
"""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from process_work import loaded_work

from coretsia.supervisor.process import (
    AsyncMismatchError,
    DuplicateProcessNameError,
    ProcessArgumentError,
    ProcessManager,
    ProcessTargetError,
    RegistrationClosedError,
    discover,
    snapshot,
)
from coretsia.supervisor.process_entries.decorator import declaration_of

_counter = itertools.count()

HEADER = """
from coretsia.supervisor.process import process

BUILT = []
EXECUTED = []


class Base:
    enabled = True
    enable_async = False

    def __init__(self):
        BUILT.append(type(self).__name__)

    def execute(self, pool, worker_id):
        EXECUTED.append(worker_id)
"""


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    """Write modules under a fresh directory on sys.path; each gets a unique name."""
    written: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str, *, header: bool = True, name: str | None = None) -> str:
        name = name or f"coretsia_test_entries_{next(_counter)}"
        text = (HEADER if header else "") + textwrap.dedent(source)
        (tmp_path / f"{name}.py").write_text(text)
        import importlib

        importlib.invalidate_caches()
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def loaded(name: str) -> ModuleType:
    return sys.modules[name]


class TestDiscovery:
    def test_default_declaration_uses_the_fully_qualified_name(
        self, modules: Callable[..., str]
    ) -> None:
        """A null name becomes ``module.Qualname``; one worker keeps it whole."""
        mod = modules("""
            @process
            class Mailer(Base):
                pass
        """)
        manager = ProcessManager()
        found = discover([mod], manager)
        assert list(manager.all()) == [f"{mod}.Mailer"]
        entry = manager.entries()[0]
        assert (entry.target, entry.kind, entry.enable_async) == (f"{mod}:Mailer", "process", False)
        assert [d.target for d in found] == [f"{mod}:Mailer"]

    def test_workers_expand_through_add_batch(self, modules: Callable[..., str]) -> None:
        """workers=3 with a name expands to ``name:0..2`` and builds the class once."""
        mod = modules("""
            @process(name="mail", workers=3)
            class Mailer(Base):
                pass
        """)
        manager = ProcessManager()
        discover([mod], manager)
        assert list(manager.all()) == ["mail:0", "mail:1", "mail:2"]
        assert loaded(mod).BUILT == ["Mailer"]
        tasks = set(map(id, manager.all().values()))
        assert len(tasks) == 1

    def test_unnamed_batch_appends_indexes_to_the_class_name(
        self, modules: Callable[..., str]
    ) -> None:
        """Several workers of a null name become ``module.Qualname:0``, ..."""
        mod = modules("""
            @process(workers=2)
            class Mailer(Base):
                pass
        """)
        manager = ProcessManager()
        discover([mod], manager)
        assert list(manager.all()) == [f"{mod}.Mailer:0", f"{mod}.Mailer:1"]

    def test_zero_workers_is_never_built(self, modules: Callable[..., str]) -> None:
        """A workers=0 declaration is validated and recorded, never instantiated."""
        mod = modules("""
            @process(workers=0)
            class Idle(Base):
                pass
        """)
        manager = ProcessManager()
        (found,) = discover([mod], manager)
        assert manager.all() == {}
        assert loaded(mod).BUILT == []
        assert found.enabled is None

    def test_disabled_class_is_built_once_and_skipped(self, modules: Callable[..., str]) -> None:
        """The enabled hook is read from one instance; a disabled class adds no worker."""
        mod = modules("""
            @process(workers=4)
            class Off(Base):
                enabled = False

            @process
            class On(Base):
                pass
        """)
        manager = ProcessManager()
        found = discover([mod], manager)
        assert loaded(mod).BUILT == ["Off", "On"]
        assert list(manager.all()) == [f"{mod}.On"]
        assert manager.entries()[0].worker_id == 0
        assert [d.enabled for d in found] == [False, True]

    def test_discovery_never_executes_a_task(self, modules: Callable[..., str]) -> None:
        """Preparation builds instances but never calls execute."""
        mod = modules("""
            @process(workers=2)
            class Job(Base):
                pass
        """)
        discover([mod], ProcessManager())
        assert loaded(mod).EXECUTED == []

    def test_async_inherits_and_overrides(self, modules: Callable[..., str]) -> None:
        """None inherits the task's flag; an explicit flag overrides it (shape permitting)."""
        mod = modules("""
            @process
            class Inherits(Base):
                enable_async = True

                async def execute(self, pool, worker_id):
                    pass

            @process(enable_async=True)
            class Overrides(Base):
                enable_async = False

                async def execute(self, pool, worker_id):
                    pass
        """)
        manager = ProcessManager()
        discover([mod], manager)
        assert [e.enable_async for e in manager.entries()] == [True, True]
        overridden = manager.get(f"{mod}.Overrides")
        assert overridden.enable_async is True
        assert type(overridden).__name__ == "AsyncOverride"

    def test_only_the_defining_module_counts(self, modules: Callable[..., str]) -> None:
        """A class imported into another module is found once, where it is defined."""
        first = modules("""
            @process
            class Shared(Base):
                pass
        """)
        second = modules(f"from {first} import Shared\n", header=False)
        manager = ProcessManager()
        found = discover([second, first], manager)
        assert [d.target for d in found] == [f"{first}:Shared"]
        assert list(manager.all()) == [f"{first}.Shared"]

    def test_subclasses_do_not_inherit_the_declaration(self, modules: Callable[..., str]) -> None:
        """Only classes decorated themselves are entries."""
        mod = modules("""
            @process
            class Parent(Base):
                pass

            class Child(Parent):
                pass
        """)
        manager = ProcessManager()
        discover([mod], manager)
        assert list(manager.all()) == [f"{mod}.Parent"]
        assert declaration_of(loaded(mod).Child) is None

    def test_only_named_modules_are_imported(self, modules: Callable[..., str]) -> None:
        """Discovery imports what it is given, never a neighbour in the same directory."""
        neighbour = modules("""
            @process
            class Hidden(Base):
                pass
        """)
        named = modules("""
            @process
            class Visible(Base):
                pass
        """)
        manager = ProcessManager()
        discover([named], manager)
        assert neighbour not in sys.modules
        assert list(manager.all()) == [f"{named}.Visible"]

    def test_invalid_class_is_refused_before_any_is_built(
        self, modules: Callable[..., str]
    ) -> None:
        """Every class is validated before the first constructor runs; nothing added."""
        mod = modules("""
            @process
            class Good(Base):
                pass

            @process(enable_async=True)
            class Mismatch(Base):
                pass
        """)
        manager = ProcessManager()
        with pytest.raises(AsyncMismatchError):
            discover([mod], manager)
        assert loaded(mod).BUILT == []
        assert manager.all() == {}

    @pytest.mark.parametrize(
        ("body", "sentence"),
        [
            (
                "@process\nclass NeedsArgs(Base):\n    def __init__(self, dsn):\n        pass\n",
                "needs constructor arguments",
            ),
            ("@process\nclass NoExecute:\n    enabled = True\n", "needs an execute method"),
        ],
        ids=["constructor-arguments", "no-execute"],
    )
    def test_unusable_classes_are_refused(
        self, modules: Callable[..., str], body: str, sentence: str
    ) -> None:
        """A declared class must be buildable with no arguments and have execute."""
        mod = modules(body)
        with pytest.raises(ProcessTargetError, match=sentence):
            discover([mod], ProcessManager())

    def test_discovery_is_atomic(self, modules: Callable[..., str]) -> None:
        """A name collision in a later class leaves no entry of the discovery behind."""
        mod = modules("""
            @process(name="first")
            class First(Base):
                pass

            @process(name="taken", workers=2)
            class Second(Base):
                pass
        """)
        manager = ProcessManager().add_batch(1, loaded_work, name="taken:1")
        with pytest.raises(DuplicateProcessNameError):
            discover([mod], manager)
        assert list(manager.all()) == ["taken:1"]
        assert manager.discovered() == ()

    def test_unimportable_module_is_refused_without_echoing_it(
        self, modules: Callable[..., str]
    ) -> None:
        """An import error surfaces as a fixed sentence; the cause stays chained."""
        mod = modules("raise RuntimeError('/srv/secret/path')\n", header=False)
        with pytest.raises(ProcessTargetError) as caught:
            discover([mod], ProcessManager())
        assert str(caught.value) == "a discovery module cannot be imported"
        assert isinstance(caught.value.__cause__, RuntimeError)

    @pytest.mark.parametrize(
        "names",
        ["single_string", ["pkg/mod.py"], [".relative"], [""], [42], ["a..b"]],
        ids=["bare-string", "path", "relative", "empty", "not-a-string", "empty-part"],
    )
    def test_module_names_are_absolute_dotted_names(self, names: Any) -> None:
        """Paths, relative names and a lone string are refused before importing."""
        with pytest.raises(ProcessArgumentError):
            discover(names, ProcessManager())

    def test_closed_manager_refuses_discovery_before_importing(
        self, modules: Callable[..., str]
    ) -> None:
        """After a start attempt discovery is refused and imports nothing."""
        mod = modules("""
            @process
            class Job(Base):
                pass
        """)
        manager = ProcessManager()
        manager.registry.close()
        with pytest.raises(RegistrationClosedError):
            discover([mod], manager)
        assert mod not in sys.modules

    def test_snapshot_keeps_the_raw_declarations(self, modules: Callable[..., str]) -> None:
        """The generation record keeps None distinct from False, and the enabled read."""
        mod = modules("""
            @process
            class Inherit(Base):
                pass

            @process(name="explicit", workers=2, enable_async=False)
            class Explicit(Base):
                pass

            @process(workers=0)
            class Idle(Base):
                pass
        """)
        manager = ProcessManager()
        discover([mod], manager)
        assert snapshot(manager)["declarations"] == [
            {
                "target": f"{mod}:Inherit",
                "name": None,
                "workers": 1,
                "enable_async": None,
                "enabled": True,
            },
            {
                "target": f"{mod}:Explicit",
                "name": "explicit",
                "workers": 2,
                "enable_async": False,
                "enabled": True,
            },
            {
                "target": f"{mod}:Idle",
                "name": None,
                "workers": 0,
                "enable_async": None,
                "enabled": None,
            },
        ]
