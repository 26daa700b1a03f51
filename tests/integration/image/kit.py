"""The image under test: built once per test run by scripts/image, reused while its inputs are
unchanged, and run with podman as this machine's container host needs (scripts/containers.sh)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# What the image is made of: a change to any of these makes the next test run build it anew.
_INPUTS = ("Dockerfile", ".dockerignore", "pyproject.toml", "scripts/image", "scripts/containers.sh")
UID = 10001


def _inputs_digest() -> str:
    digest = hashlib.sha256()
    paths = [ROOT / p for p in _INPUTS] + sorted((ROOT / "syncer").rglob("*.py"))
    for path in paths:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def run_with_containers_conf(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``command`` with the settings of scripts/containers.sh (runtime runc, cgroupfs, no ulimits)."""
    script = '. scripts/containers.sh && exec "$@"'
    return subprocess.run(
        ["bash", "-c", script, "containers", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=check,
    )


@dataclass(frozen=True)
class Image:
    """A built image: its reference and whether this test run built it or found it built."""

    ref: str
    built_now: bool

    def run(
        self, *args: str, mounts: tuple[str, ...] = (), entrypoint: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the image once, removed afterwards: host network, read-only root, its own user."""
        command = ["podman", "run", "--rm", "--network", "host", "--read-only"]
        for mount in mounts:
            command += ["--volume", mount]
        if entrypoint is not None:
            command += ["--entrypoint", entrypoint]
        return run_with_containers_conf(*command, self.ref, *args, check=False)


def build_image() -> Image:
    """The image of the working tree, built by scripts/image unless this exact input is built already."""
    for tool in ("podman", "buildah", "debootstrap"):
        assert shutil.which(tool), f"{tool} is missing: scripts/bootstrap installs it"
    ref = f"localhost/syncer:test-{_inputs_digest()}"
    if run_with_containers_conf("podman", "image", "exists", ref, check=False).returncode == 0:
        return Image(ref, built_now=False)
    built = run_with_containers_conf("scripts/image", "--tag", ref, check=False)
    assert built.returncode == 0, built.stderr[-4000:]
    print(built.stderr.splitlines()[-1], flush=True)
    _remove_older_builds(keep=ref)
    return Image(ref, built_now=True)


def _remove_older_builds(keep: str) -> None:
    """Drop the test images of earlier inputs, so that rebuilds do not pile up on the disk."""
    listed = run_with_containers_conf(
        "podman", "images", "--format", "{{.Repository}}:{{.Tag}}", "localhost/syncer"
    ).stdout.split()
    stale = [ref for ref in listed if ref.startswith("localhost/syncer:test-") and ref != keep]
    if stale:
        run_with_containers_conf("podman", "rmi", "--force", *stale, check=False)
