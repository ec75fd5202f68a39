"""The immutable generation: what every worker boots from (seed 000's "artifact-only boot").

``start`` validates the configuration once and then freezes the result here, so that a
worker never reads ``coretsia.toml``, never discovers anything and never depends on a
previous worker's state: it reads one verified snapshot and boots from that. Layout,
relative to the project root::

    var/generations/
        current                       "<id>\\n", replaced atomically
        <id>/generation.json          {"fingerprint": ..., "spec": {...}, "version": 2}

``<id>`` is the first 16 hex digits of the fingerprint, ``-``, a 6-digit counter that only
grows, ``-``, and 16 random hex digits. The counter means publishing the same spec again
still makes a new generation (a recycled worker can tell "same content" from "same
generation"); the random part makes the id unique beyond this root, since another root
with the same configuration counts from 1 too and task sources key durable state, such
as a queue's leases, by generation. The spec is a
:class:`~coretsia.supervisor.generation.spec.GenerationSpec`; the file is that record in
the protocol's codec (deterministic JSON: sorted keys, compact, UTF-8, one line) and the
fingerprint is the SHA-256 of the deterministic encoding of the spec alone.

Writer and readers are split on purpose:

* :func:`publish` runs in the supervisor, once the guardian holds the lifecycle lock, so it
  is the only writer of a root's generations. It writes into a temporary directory, fsyncs,
  renames the directory into place (a generation appears whole or not at all), then swaps
  ``current`` with a temp-file-and-rename, then removes every other generation.
* :func:`load_current_generation` runs on every worker's boot path. It imports only
  :mod:`os`, :mod:`hashlib`, the tiny
  :mod:`~coretsia.worker_protocol.trusted_paths` and the protocol's codec, which the
  worker channel loads anyway (interpreter start-up dominates pool start and recycle),
  decodes the file once into the record, never writes, never scans for a newest
  directory and never falls back: anything off is a :class:`GenerationError` whose
  message is a fixed phrase, never file content.

Who wrote it. The fingerprint alone proves nothing: anyone can recompute a SHA-256. So
:func:`publish` returns the generation's *pin*, ``<id>:<fingerprint>``, and the supervisor
hands it to every worker it spawns in argv (``--coretsia-worker-generation``), through
the guardian's channel (and the fork server's), never through a file. A worker given a
pin boots only if ``current`` names the pinned id and the file records the pinned
fingerprint (whose spec hashes to it): a generation written by anyone but the supervisor
of its run is refused, whatever its content. The pin is no secret (a worker's argv is
public): forging a spec with a given SHA-256 is what cannot be done. On top of that the
reader trusts nothing under a directory or file another user owns or may write into (see
:mod:`~coretsia.worker_protocol.trusted_paths`).
"""

from __future__ import annotations

import os
import stat
from hashlib import sha256

from coretsia.supervisor.generation.spec import GenerationSpec
from coretsia.worker_protocol import _strict as s
from coretsia.worker_protocol import trusted_paths
from coretsia.worker_protocol._codec import Codec, Frame, Nested
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import LocalProtocolError, RemoteProtocolError
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR
from coretsia.worker_protocol.paths import is_safe_relative_path
from coretsia.worker_protocol.records import field
from coretsia.worker_protocol.trusted_paths import is_trusted

GENERATION_VERSION = 2
"""The version of ``generation.json``; a worker refuses any other (2: the typed spec)."""

GENERATION_FILE = "generation.json"
CURRENT_FILE = "current"
MAX_GENERATION_BYTES = 1 << 20
"""Largest ``generation.json`` a worker reads: a spec is small; a huge file is an error."""

_MAX_CURRENT_BYTES = 64
_HEX = frozenset("0123456789abcdef")
_DIGITS = frozenset("0123456789")
_PREFIX_LEN = 16
_COUNTER_LEN = 6
_NONCE_BYTES = 8
_ID_LEN = _PREFIX_LEN + 1 + _COUNTER_LEN + 1 + 2 * _NONCE_BYTES
_COUNTER_END = _PREFIX_LEN + 1 + _COUNTER_LEN
_FINGERPRINT_LEN = 64
_MAX_COUNTER = 10**_COUNTER_LEN - 1
_TMP_PREFIX = ".tmp-"
_CURRENT_TMP = ".current.tmp"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


class GenerationError(Exception):
    """The generation cannot be published or is not a valid, verified one.

    The message is a fixed phrase naming the check that failed; it never carries bytes,
    paths or values from the file (they may hold configuration a log must not show).
    """


_SPEC = Nested(GenerationSpec)


class GenerationFile(Frame, kw_only=True):
    """``generation.json``: the spec and its fingerprint (``version`` is the codec's)."""

    fingerprint: str = field(kind=s.Hex(_FINGERPRINT_LEN))
    spec: GenerationSpec = field(kind=_SPEC)


_FILE = Codec(GENERATION_VERSION, (GenerationFile,), tagged=False, max_bytes=MAX_GENERATION_BYTES)

_NOT_JSON = frozenset(
    {
        Reason.FRAME_OVERSIZED,
        Reason.FRAME_NOT_UTF8,
        Reason.FRAME_NOT_JSON,
        Reason.FRAME_DUPLICATE_KEY,
        Reason.FRAME_NOT_OBJECT,
    }
)


def fingerprint(spec: GenerationSpec) -> str:
    """SHA-256 (lowercase hex) of the deterministic encoding of ``spec``."""
    return sha256(s.dumps(_SPEC.write(spec, "$.spec"))).hexdigest()


def is_generation_id(name: str) -> bool:
    """True for ``<16 lowercase hex>-<6 digits>-<16 lowercase hex>``, the only shape."""
    return (
        len(name) == _ID_LEN
        and name[_PREFIX_LEN] == "-"
        and name[_COUNTER_END] == "-"
        and _HEX.issuperset(name[:_PREFIX_LEN])
        and _DIGITS.issuperset(name[_PREFIX_LEN + 1 : _COUNTER_END])
        and _HEX.issuperset(name[_COUNTER_END + 1 :])
    )


def is_pin(value: str) -> bool:
    """True for ``<generation id>:<64 lowercase hex>``, what :func:`publish` returns."""
    gen_id, sep, digest = value.partition(":")
    return (
        bool(sep)
        and is_generation_id(gen_id)
        and len(digest) == _FINGERPRINT_LEN
        and _HEX.issuperset(digest)
    )


# --- writer (supervisor) -------------------------------------------------------------


def encode_generation(spec: GenerationSpec) -> tuple[str, bytes]:
    """The fingerprint of ``spec`` and the bytes of its ``generation.json``.

    Checked by the rules every worker's decode applies: a spec a worker would refuse is
    a :class:`GenerationError` here.
    """
    try:
        digest = fingerprint(spec)
        return digest, _FILE.encode(GenerationFile(fingerprint=digest, spec=spec))
    except LocalProtocolError as error:
        if error.reason is Reason.FRAME_OVERSIZED:
            raise GenerationError("generation spec is too large") from None
        raise GenerationError("generation spec is not valid") from None
    except (s.FieldError, TypeError, ValueError, RecursionError):
        raise GenerationError("generation spec is not valid") from None


def publish(root: str | os.PathLike[str], spec: GenerationSpec) -> str:
    """Publish ``spec`` as a new generation, make it current, prune the others.

    Call only while holding the lifecycle lock: the lock is what makes this the single
    writer, so the temporary names and the counter need no further coordination. The
    artifact root workers receive in argv is always :data:`GENERATIONS_DIR`; returns the
    generation's pin (``<id>:<fingerprint>``), which workers receive in argv too.
    """
    digest, document = encode_generation(spec)

    base = os.path.join(os.fspath(root), GENERATIONS_DIR)
    try:
        trusted_paths.make_dir(os.path.dirname(base), trusted_paths.VAR_DIR)
        trusted_paths.make_dir(base, trusted_paths.GENERATIONS_DIR)
        counter = _next_counter(base)
        gen_id = (
            f"{digest[:_PREFIX_LEN]}-{counter:0{_COUNTER_LEN}d}-{os.urandom(_NONCE_BYTES).hex()}"
        )
        tmp_dir = os.path.join(base, _TMP_PREFIX + gen_id)
        trusted_paths.make_dir(tmp_dir, trusted_paths.GENERATION)
        _write_durably(tmp_dir, GENERATION_FILE, document)
        os.rename(tmp_dir, os.path.join(base, gen_id))
        _fsync_dir(base)
        _write_durably(base, CURRENT_FILE, (gen_id + "\n").encode("ascii"), _CURRENT_TMP)
        _prune(base, keep=gen_id)
    except OSError:
        raise GenerationError("generation could not be written") from None
    return f"{gen_id}:{digest}"


def _next_counter(base: str) -> int:
    """One more than any counter in use, so ids only grow even across crashes."""
    highest = 0
    with os.scandir(base) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith(_TMP_PREFIX):
                name = name[len(_TMP_PREFIX) :]
            if is_generation_id(name):
                highest = max(highest, int(name[_PREFIX_LEN + 1 : _COUNTER_END]))
    current = _read_current_id(base)
    if current is not None:
        highest = max(highest, int(current[_PREFIX_LEN + 1 : _COUNTER_END]))
    if highest >= _MAX_COUNTER:
        raise GenerationError("generation counter exhausted")
    return highest + 1


def _read_current_id(base: str) -> str | None:
    """The id ``current`` names, or None when it is absent or malformed (writer side)."""
    try:
        return _load_current_id(base)
    except GenerationError:
        return None


def _write_durably(directory: str, name: str, data: bytes, tmp_name: str | None = None) -> None:
    """Write ``directory/name`` through a temp file, fsync and rename, then fsync the dir."""
    tmp = os.path.join(directory, tmp_name or name + ".tmp")
    remove_path(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the mode went through the umask: exactly ours, whatever it is
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, os.path.join(directory, name))
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    """Make a rename durable; POSIX only (Windows cannot open a directory)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _prune(base: str, keep: str) -> None:
    """Remove every entry but ``current`` and the ``keep`` generation, never following links."""
    with os.scandir(base) as entries:
        doomed = [e.path for e in entries if e.name not in (CURRENT_FILE, keep)]
    for path in doomed:
        remove_path(path)


def remove_path(path: str) -> None:
    """Remove a file, link or directory tree if it exists (links are not followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        # start-up budget: docs/performance.md#start-up-import-rules
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)


# --- reader (worker boot path) -------------------------------------------------------


def load_current_generation(
    root: str | os.PathLike[str], artifact_root: str, pin: str | None = None
) -> tuple[str, GenerationSpec]:
    """Return the id and the spec of the generation ``current`` names, verified, or raise.

    ``artifact_root`` and ``pin`` are what the worker received in argv; with a pin, only
    the generation its supervisor published is accepted (see the module docstring). Only
    the supervisor reads without one: its own previous run's generation. This never
    writes, never looks at any generation but the one ``current`` names, and never falls
    back. The id is unique per ``start`` (a counter follows the fingerprint), so a task
    source can tell its own generation's leases from a previous one's.
    """
    if not is_safe_relative_path(artifact_root):
        raise GenerationError("artifact root is not a safe relative path")
    base = os.fspath(root)
    for part in artifact_root.split("/"):
        base = os.path.join(base, part)
        _require_trusted_dir(base)
    gen_id = _load_current_id(base)
    if pin is not None and pin.partition(":")[0] != gen_id:
        raise GenerationError("current generation is not the one this run published")
    gen_dir = os.path.join(base, gen_id)
    _require_trusted_dir(gen_dir)
    raw = _read_bounded(os.path.join(gen_dir, GENERATION_FILE), MAX_GENERATION_BYTES)
    try:
        document, body, _ = _FILE.open(raw)  # the one decode: strict JSON, then every field
    except RemoteProtocolError as error:
        raise GenerationError(_refusal(error.reason)) from None
    if body + b"\n" != raw:
        raise GenerationError("generation file is not in canonical form")
    recorded = document.fingerprint
    if fingerprint(document.spec) != recorded or not gen_id.startswith(recorded[:_PREFIX_LEN]):
        raise GenerationError("generation fingerprint does not match")
    if pin is not None and pin.partition(":")[2] != recorded:
        raise GenerationError("generation is not the one this run published")
    return gen_id, document.spec


def _refusal(reason: Reason) -> str:
    """The fixed phrase for a file the codec refused."""
    if reason in _NOT_JSON:
        return "generation file is not valid JSON"
    if reason is Reason.FRAME_UNSUPPORTED_VERSION:
        return "generation version is not supported"
    return "generation file does not match the generation schema"


def _require_trusted_dir(path: str) -> None:
    """A real directory (not a link) that only its owner, us or root, may write into."""
    try:
        info = os.lstat(path)
    except OSError:
        raise GenerationError("generation directory is missing") from None
    if not stat.S_ISDIR(info.st_mode):
        raise GenerationError("generation directory is missing")
    if not is_trusted(info):
        raise GenerationError("generation directory is not trusted")


def _load_current_id(base: str) -> str:
    """Read and validate the id in ``base/current``."""
    raw = _read_bounded(os.path.join(base, CURRENT_FILE), _MAX_CURRENT_BYTES)
    if not raw.endswith(b"\n"):
        raise GenerationError("current pointer is malformed")
    try:
        gen_id = raw[:-1].decode("ascii")
    except UnicodeDecodeError:
        raise GenerationError("current pointer is malformed") from None
    if not is_generation_id(gen_id):
        raise GenerationError("current pointer is malformed")
    return gen_id


def _read_bounded(path: str, limit: int) -> bytes:
    """Read a regular file (not through a symlink) of at most ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_BINARY)
    except OSError:
        raise GenerationError("generation file is missing or unreadable") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GenerationError("generation file is not a regular file")
        if not is_trusted(info):
            raise GenerationError("generation file is not trusted")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        raise GenerationError("generation file is missing or unreadable") from None
    finally:
        os.close(fd)
    if size > limit:
        raise GenerationError("generation file is too large")
    return b"".join(chunks)
