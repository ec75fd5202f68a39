"""The immutable generation: published whole, selected by ``current``, verified on load.

Real files in a temporary root; every way a worker could boot from the wrong bytes
(tampering, a bad pointer, a missing generation, links, oversized files) must be a
:class:`GenerationError` that echoes nothing from the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from launcher_harness import respec

from coretsia.supervisor.generation.published import (
    GENERATION_FILE,
    GENERATION_VERSION,
    MAX_GENERATION_BYTES,
    GenerationError,
    is_generation_id,
    is_pin,
    load_current_generation,
    publish,
)
from coretsia.supervisor.generation.spec import GenerationSpec, TaskType
from coretsia.worker_protocol._strict import dumps
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR

SPEC = GenerationSpec(
    workers=2,
    max_requests=1000,
    task_type=TaskType.QUEUE,
    task_source="app.jobs:make_source",
    app_path=(".",),
    source_options=(("secret_like", "s3cr3t-value"),),
)
SPEC_JSON: dict[str, object] = {
    "workers": 2,
    "max_requests": 1000,
    "max_memory_mb": 0,
    "heartbeat_timeout_ms": 0,
    "debug": False,
    "telemetry": "off",
    "app_path": ["."],
    "task_type": "queue",
    "task_source": "app.jobs:make_source",
    "source_options": {"secret_like": "s3cr3t-value"},
    "hooks": {"before": [], "after": [], "reset": []},
    "runtime_entrypoint": None,
    "processes": None,
    "event_loop": None,
    "process_main": None,
    "ipc": None,
}
"""``SPEC`` as ``generation.json`` holds it."""


SCHEMA = "generation file does not match the generation schema"


def canonical_json(document: object) -> bytes:
    """The file's encoding: deterministic JSON, one line."""
    assert isinstance(document, dict)
    return dumps(document) + b"\n"


def _base(root: Path) -> Path:
    return root / GENERATIONS_DIR


def _current_id(root: Path) -> str:
    return (_base(root) / "current").read_text("ascii").strip()


def _generation_file(root: Path) -> Path:
    return _base(root) / _current_id(root) / GENERATION_FILE


def _rewrite(root: Path, document: object) -> None:
    """Replace the current generation's file with ``document``, canonically encoded."""
    path = _generation_file(root)
    path.chmod(0o600)
    path.write_bytes(canonical_json(document))


def _document(root: Path) -> dict[str, object]:
    loaded = json.loads(_generation_file(root).read_bytes())
    assert isinstance(loaded, dict)
    return loaded


def test_publish_then_load_round_trips(tmp_path: Path) -> None:
    pin = publish(tmp_path, SPEC)
    assert is_pin(pin)
    assert pin == f"{_current_id(tmp_path)}:{_document(tmp_path)['fingerprint']}"
    assert load_current_generation(tmp_path, GENERATIONS_DIR, pin) == (_current_id(tmp_path), SPEC)


def test_file_is_deterministic_json_with_spec_fingerprint(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    raw = _generation_file(tmp_path).read_bytes()
    spec_bytes = json.dumps(SPEC_JSON, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(spec_bytes).hexdigest()
    expected = {"fingerprint": digest, "spec": SPEC_JSON, "version": GENERATION_VERSION}
    assert raw == json.dumps(expected, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    gen_id = _current_id(tmp_path)
    assert is_generation_id(gen_id)
    assert gen_id[:23] == f"{digest[:16]}-000001"
    assert (_base(tmp_path) / "current").read_bytes() == (gen_id + "\n").encode()


def test_republishing_makes_a_new_generation_and_prunes_the_old(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    first = _current_id(tmp_path)
    publish(tmp_path, SPEC)
    second = _current_id(tmp_path)
    assert second != first
    assert second[:16] == first[:16]  # same content, same fingerprint prefix
    assert int(second[17:23]) == int(first[17:23]) + 1
    assert sorted(p.name for p in _base(tmp_path).iterdir()) == sorted([second, "current"])


def test_current_switches_to_the_latest_spec(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    changed = respec(SPEC, workers=3)
    publish(tmp_path, changed)
    assert load_current_generation(tmp_path, GENERATIONS_DIR)[1] == changed


def test_prune_removes_leftovers_but_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    root = tmp_path / "root"
    root.mkdir()
    publish(root, SPEC)
    base = _base(root)
    (base / ".tmp-0123456789abcdef-000009-0123456789abcdef").mkdir()  # a publish that crashed
    (base / "stray-file").write_text("x")
    (base / "link").symlink_to(outside, target_is_directory=True)
    publish(root, SPEC)
    assert sorted(p.name for p in base.iterdir()) == sorted([_current_id(root), "current"])
    assert (outside / "keep.txt").read_text() == "keep"
    # The crashed temp directory's counter was still counted: ids only grow.
    assert _current_id(root)[16:23] == "-000010"


def test_counter_survives_a_missing_current(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    publish(tmp_path, SPEC)
    (_base(tmp_path) / "current").unlink()
    publish(tmp_path, SPEC)
    assert _current_id(tmp_path)[16:23] == "-000003"


def test_files_and_directories_are_private(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    for path in (_base(tmp_path), _generation_file(tmp_path).parent):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    for path in (_generation_file(tmp_path), _base(tmp_path) / "current"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o177 == 0


@pytest.mark.parametrize(
    "change",
    [
        {"workers": "2"},
        {"workers": 1025},
        {"max_requests": 0},
        {"max_memory_mb": -1},
        {"task_type": "cron"},
        {"app_path": ("../elsewhere",)},
        {"app_path": ["."]},
        {"task_source": None},
        {"source_options": (("x", 1.5),)},
        {"source_options": (("x", {1, 2}),)},
        {"event_loop": "curio"},
        {"event_loop": "trio"},  # no entries: no event loop
        {"hooks": {"before": []}},
    ],
)
def test_spec_a_worker_would_refuse_is_not_published_and_nothing_changes(
    tmp_path: Path, change: dict[str, object]
) -> None:
    """``publish`` checks by the rules of the workers' decode: what it writes, they read."""
    publish(tmp_path, SPEC)
    before = _current_id(tmp_path)
    spec = respec(SPEC, **change)
    with pytest.raises(GenerationError) as caught:
        publish(tmp_path, spec)
    assert str(caught.value) == "generation spec is not valid"
    assert _current_id(tmp_path) == before
    assert load_current_generation(tmp_path, GENERATIONS_DIR)[1] == SPEC


def test_tampered_spec_fails_the_fingerprint(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    document = _document(tmp_path)
    document["spec"] = {**SPEC_JSON, "workers": 99}
    _rewrite(tmp_path, document)
    with pytest.raises(GenerationError) as caught:
        load_current_generation(tmp_path, GENERATIONS_DIR)
    assert "s3cr3t" not in str(caught.value)
    assert "99" not in str(caught.value)


def test_fingerprint_rewritten_to_match_still_fails_the_id(tmp_path: Path) -> None:
    """The id's prefix commits to the fingerprint, so a consistent rewrite is caught too."""
    publish(tmp_path, SPEC)
    spec = {**SPEC_JSON, "workers": 99}
    digest = hashlib.sha256(dumps(spec)).hexdigest()
    _rewrite(tmp_path, {"version": GENERATION_VERSION, "fingerprint": digest, "spec": spec})
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR)


@pytest.mark.parametrize(
    "change",
    [
        {"version": 1},
        {"version": True},
        {"version": "2"},
        {"fingerprint": "0" * 64},
        {"fingerprint": 5},
        {"spec": []},
        {"extra": 1},
    ],
)
def test_wrong_envelope_is_refused(tmp_path: Path, change: dict[str, object]) -> None:
    publish(tmp_path, SPEC)
    _rewrite(tmp_path, {**_document(tmp_path), **change})
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR)


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"version": 1}, "generation version is not supported"),
        ({"spec": {**SPEC_JSON, "workers": "2"}}, SCHEMA),
        ({"spec": {**SPEC_JSON, "extra": 1}}, SCHEMA),
    ],
)
def test_the_decode_names_the_check_never_the_value(
    tmp_path: Path, change: dict[str, object], phrase: str
) -> None:
    pin = publish(tmp_path, SPEC)
    _rewrite(tmp_path, {**_document(tmp_path), **change})
    with pytest.raises(GenerationError) as caught:
        load_current_generation(tmp_path, GENERATIONS_DIR, pin)
    assert str(caught.value) == phrase


def test_a_spec_past_the_size_limit_is_not_published(tmp_path: Path) -> None:
    big = respec(SPEC, source_options=(("x", "y" * MAX_GENERATION_BYTES),))
    with pytest.raises(GenerationError) as caught:
        publish(tmp_path, big)
    assert str(caught.value) == "generation spec is too large"


def test_non_canonical_or_broken_bytes_are_refused(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    path = _generation_file(tmp_path)
    path.chmod(0o600)
    document = _document(tmp_path)
    for raw in (
        json.dumps(document, sort_keys=True, indent=2).encode(),  # same values, not canonical
        b'{"version":1,"version":1}',
        b"\xff\xfe",
        b"",
        b"[1, 2",
    ):
        path.write_bytes(raw)
        with pytest.raises(GenerationError):
            load_current_generation(tmp_path, GENERATIONS_DIR)


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    path = _generation_file(tmp_path)
    path.chmod(0o600)
    path.write_bytes(b" " * (MAX_GENERATION_BYTES + 1))
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR)


def test_missing_current_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR)
    publish(tmp_path, SPEC)
    (_base(tmp_path) / "current").unlink()
    with pytest.raises(GenerationError):  # never scans for the newest directory instead
        load_current_generation(tmp_path, GENERATIONS_DIR)


def test_current_naming_a_missing_generation_is_refused(tmp_path: Path) -> None:
    publish(tmp_path, SPEC)
    (_base(tmp_path) / "current").write_text("0123456789abcdef-000042\n")
    with pytest.raises(GenerationError):  # never falls back to the generation that exists
        load_current_generation(tmp_path, GENERATIONS_DIR)


def test_ids_are_unique_beyond_one_root(tmp_path: Path) -> None:
    """Two roots with one configuration count alike but never share an id.

    Task sources key durable state by generation (the SQLite queue recovers the leases
    of any generation but its own), so a root that takes over a database from another
    must not see its predecessor's id as its own.
    """
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    publish(first, SPEC)
    publish(second, SPEC)
    assert _current_id(first)[:23] == _current_id(second)[:23]
    assert _current_id(first) != _current_id(second)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n",
        b"0123456789abcdef-000001-0123456789abcdef",  # no newline
        b"0123456789abcdef-000001-0123456789abcdef\n\n",
        b"0123456789ABCDEF-000001-0123456789abcdef\n",
        b"0123456789abcdef-000001-0123456789ABCDEF\n",
        b"0123456789abcdef-00001-0123456789abcdef\n",
        b"0123456789abcdef_000001-0123456789abcdef\n",
        b"0123456789abcdef-000001_0123456789abcdef\n",
        b"0123456789abcdef-00000a-0123456789abcdef\n",
        b"0123456789abcdef-000001-0123456789abcde\n",
        b"0123456789abcdef-000001\n",  # the shape before the random part
        b" 0123456789abcdef-000001-0123456789abcdef\n",
        b"../../../../etc/passwd\n",
        b"\xff" * 40 + b"\n",
        b"0" * 100 + b"\n",
    ],
)
def test_bad_current_id_is_refused(tmp_path: Path, content: bytes) -> None:
    publish(tmp_path, SPEC)
    (_base(tmp_path) / "current").write_bytes(content)
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR)


def test_linked_generation_file_or_directory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    publish(root, SPEC)
    gen_dir = _generation_file(root).parent
    elsewhere = tmp_path / "elsewhere"
    gen_dir.rename(elsewhere)
    gen_dir.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(GenerationError):
        load_current_generation(root, GENERATIONS_DIR)
    gen_dir.unlink()
    gen_dir.mkdir()
    (gen_dir / GENERATION_FILE).symlink_to(elsewhere / GENERATION_FILE)
    with pytest.raises(GenerationError):
        load_current_generation(root, GENERATIONS_DIR)


@pytest.mark.parametrize("artifact_root", ["", "/abs", "../x", "var/../generations", "a b"])
def test_unsafe_artifact_root_is_refused(tmp_path: Path, artifact_root: str) -> None:
    publish(tmp_path, SPEC)
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, artifact_root)


def test_load_accepts_a_string_root(tmp_path: Path) -> None:
    publish(os.fspath(tmp_path), SPEC)
    assert load_current_generation(os.fspath(tmp_path), GENERATIONS_DIR)[1] == SPEC


# --- who wrote it: the pin and the trusted directories ----------------------------------


def test_a_pin_accepts_only_the_generation_it_names(tmp_path: Path) -> None:
    """``current`` swapped to another generation, even one with the same spec and a
    consistent fingerprint (as anyone could write), is refused for a pinned worker."""
    first = publish(tmp_path, SPEC)
    second = publish(tmp_path, SPEC)  # what a forger with write access could have made
    assert first != second
    assert load_current_generation(tmp_path, GENERATIONS_DIR, second)[1] == SPEC
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR, first)


def test_a_pin_refuses_a_rewritten_fingerprint(tmp_path: Path) -> None:
    pin = publish(tmp_path, SPEC)
    gen_id = pin.partition(":")[0]
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR, f"{gen_id}:{'0' * 64}")


@pytest.mark.parametrize(
    "pin",
    [
        "",
        "0123456789abcdef-000001-0123456789abcdef",
        "0123456789abcdef-000001-0123456789abcdef:",
        "0123456789abcdef-000001-0123456789abcdef:" + "A" * 64,
        "0123456789abcdef-000001-0123456789abcdef:" + "0" * 63,
        "bad:" + "0" * 64,
    ],
)
def test_only_the_published_shape_is_a_pin(pin: str) -> None:
    assert not is_pin(pin)


@pytest.mark.parametrize("path", ["var", "var/generations", "<generation>"])
def test_a_directory_others_may_write_is_not_trusted(tmp_path: Path, path: str) -> None:
    pin = publish(tmp_path, SPEC)
    target = _generation_file(tmp_path).parent if path == "<generation>" else tmp_path / path
    target.chmod(0o777)
    with pytest.raises(GenerationError) as caught:
        load_current_generation(tmp_path, GENERATIONS_DIR, pin)
    assert str(caught.value) == "generation directory is not trusted"


@pytest.mark.parametrize("name", ["current", GENERATION_FILE])
def test_a_file_others_may_write_is_not_trusted(tmp_path: Path, name: str) -> None:
    pin = publish(tmp_path, SPEC)
    path = _base(tmp_path) / name if name == "current" else _generation_file(tmp_path)
    path.chmod(0o666)
    with pytest.raises(GenerationError) as caught:
        load_current_generation(tmp_path, GENERATIONS_DIR, pin)
    assert str(caught.value) == "generation file is not trusted"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_generation_another_user_owns_is_not_trusted(tmp_path: Path) -> None:
    pin = publish(tmp_path, SPEC)
    os.chown(_generation_file(tmp_path), 65534, 65534)
    with pytest.raises(GenerationError):
        load_current_generation(tmp_path, GENERATIONS_DIR, pin)


def test_publish_is_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        publish(tmp_path, SPEC)
    finally:
        os.umask(previous)
    for path in (tmp_path / "var", _base(tmp_path), _generation_file(tmp_path).parent):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for path in (_generation_file(tmp_path), _base(tmp_path) / "current"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_publish_refuses_an_untrusted_generations_dir(tmp_path: Path) -> None:
    """The supervisor too: it never writes into a directory others may write into."""
    _base(tmp_path).mkdir(parents=True)
    _base(tmp_path).chmod(0o777)
    with pytest.raises(WorkerConfigError) as caught:
        publish(tmp_path, SPEC)
    assert (caught.value.key, caught.value.rule) == ("generations-dir", ConfigRule.UNTRUSTED_PATH)
