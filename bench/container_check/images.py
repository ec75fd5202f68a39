"""The images: a base (the public one, or a local one made with debootstrap) and the app.

No image registry is reachable from this project's machines, so where the public
``python:3.12-slim`` can be neither found nor pulled, the base is made here:
``debootstrap --variant=minbase`` of Debian bookworm with python3, its venv module, pip
and ca-certificates, the machine's CA bundle copied in (so that pip inside the build
reaches the package index through whatever this machine trusts), then
``tar -C DIR -c . | docker import - TAG``. Its tag carries a digest of that recipe and of
the CA bundle, so a rerun finds it and a changed recipe makes a new one.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from container_check import REPO
from container_check.commands import BUILD_IMAGE, BUILD_WHEELS, DIST, render
from container_check.docker import Docker
from container_check.errors import CheckFailed

PUBLIC_BASE = "python:3.12-slim"
"""The Dockerfile's default ``BASE``."""
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "python3-venv", "python3-pip", "ca-certificates")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
IMPORT_CHANGES = ("ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
"""An imported tarball has no configuration: give its commands the usual PATH."""
DEBOOTSTRAP_S = 1200.0
BUILD_S = 1200.0


def _local_tag() -> str:
    recipe = hashlib.sha256(repr((SUITE, MIRROR, PACKAGES, IMPORT_CHANGES)).encode())
    if CA_BUNDLE.is_file():
        recipe.update(CA_BUNDLE.read_bytes())
    return f"coretsia-base:{SUITE}-{recipe.hexdigest()[:12]}"


def choose_base(docker: Docker, mode: str) -> tuple[str, str]:
    """The base image to build on, and how it was had: found, pulled, cached or made.

    ``mode``: ``public`` (the default base, pulled if absent), ``local`` (the debootstrap
    one) or ``auto`` (the public one if the engine has it or can pull it, else local).
    """
    if mode != "local":
        if docker.image_exists(PUBLIC_BASE):
            return PUBLIC_BASE, "found"
        try:
            docker.run(("docker", "pull", "-q", PUBLIC_BASE), timeout=600, token="pull")
            return PUBLIC_BASE, "pulled"
        except CheckFailed:
            if mode == "public":
                raise
    tag = _local_tag()
    if docker.image_exists(tag):
        return tag, "cached"
    _make_local_base(docker, tag)
    return tag, "made"


def _make_local_base(docker: Docker, tag: str) -> None:
    """debootstrap a minimal Debian, add the CA bundle, import it as ``tag``."""
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise CheckFailed("debootstrap-missing")  # bin/container-deps installs it
    with tempfile.TemporaryDirectory(prefix="coretsia-base-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        try:
            subprocess.run(
                [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
                 str(rootfs), MIRROR],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                timeout=DEBOOTSTRAP_S,
                check=True,
            )  # fmt: skip
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            raise CheckFailed("debootstrap-failed") from exc
        for deb in (rootfs / "var/cache/apt/archives").glob("*.deb"):
            deb.unlink()  # the downloaded packages, already unpacked
        if CA_BUNDLE.is_file():
            shutil.copyfile(CA_BUNDLE, rootfs / "etc/ssl/certs/ca-certificates.crt")
        changes = [word for change in IMPORT_CHANGES for word in ("--change", change)]
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        try:
            imported = subprocess.run(
                docker.argv(("docker", "import", *changes, "-", tag)),
                env=docker.env,
                stdin=tar.stdout,
                stdout=subprocess.DEVNULL,
                timeout=DEBOOTSTRAP_S,
                check=False,
            )
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            tar_status = tar.wait(timeout=DEBOOTSTRAP_S)
        if imported.returncode != 0 or tar_status != 0:
            raise CheckFailed("base-import-failed")


def build_wheels(uv: str) -> None:
    """The five wheels into ``docs/deploy/dist`` (emptied first: no stale version)."""
    shutil.rmtree(REPO / DIST, ignore_errors=True)
    argv = [uv, *render(BUILD_WHEELS, {})[1:], "--quiet"]
    try:
        subprocess.run(argv, cwd=REPO, timeout=BUILD_S, check=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise CheckFailed("wheel-build-failed") from exc


def build_image(docker: Docker, base: str, image: str) -> None:
    """``docker build`` of ``docs/deploy/Dockerfile`` from the repository root.

    ``--network host``: builds reach the package index through the machine's network
    (an engine started here has no bridge); ``--force-rm``: no container of a failed
    step is left behind. The legacy builder's step lines go to this session's output.
    """
    extra = ("--network", "host", "--force-rm", "--build-arg", f"BASE={base}")
    try:
        subprocess.run(
            docker.argv(render(BUILD_IMAGE, {"image": image}, extra)),
            cwd=REPO,
            env=docker.env,
            stdin=subprocess.DEVNULL,
            timeout=BUILD_S,
            check=True,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise CheckFailed("image-build-failed") from exc
