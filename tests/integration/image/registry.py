"""A real OCI registry on loopback (Debian's docker-registry) and the pinned cosign, for the tests
that push the image by digest, sign it and verify it."""

from __future__ import annotations

import os
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from devfleet.build import ensure_cosign
from tests.integration.image.kit import run_with_containers_conf
from tests.support.waiting import eventually


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


@contextmanager
def local_registry(root: Path) -> Iterator[str]:
    """A docker-registry serving ``root`` on a free loopback port for the block; yields host:port."""
    port = _free_port()
    config = {
        "version": 0.1,
        "storage": {"filesystem": {"rootdirectory": str(root / "data")}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }
    (root / "config.yml").write_text(yaml.safe_dump(config))
    with (root / "registry.log").open("w") as log:
        proc = subprocess.Popen(
            ["docker-registry", "serve", str(root / "config.yml")], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        eventually(f"docker-registry on port {port}", lambda: _answers(f"http://127.0.0.1:{port}/v2/"), 30)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def push(local_ref: str, remote: str, workdir: Path) -> str:
    """Push ``local_ref`` to ``remote`` (repository:tag) and return the digest the registry holds."""
    digest_file = workdir / f"digest-{os.getpid()}-{abs(hash(remote))}"
    run_with_containers_conf(
        "podman", "push", "--tls-verify=false", "--digestfile", str(digest_file), local_ref, remote
    )
    return digest_file.read_text().strip()


@dataclass(frozen=True)
class Cosign:
    """The pinned cosign, kept off the public transparency log: keys and signatures stay local."""

    binary: Path

    def __call__(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COSIGN_PASSWORD": "", "COSIGN_YES": "true", "HOME": str(cwd)}
        return subprocess.run(
            [str(self.binary), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )

    def key_pair(self, folder: Path) -> tuple[Path, Path]:
        """A new cosign key pair in ``folder``: (private key, public key)."""
        folder.mkdir(parents=True, exist_ok=True)
        made = self("generate-key-pair", cwd=folder)
        assert made.returncode == 0, made.stderr
        return folder / "cosign.key", folder / "cosign.pub"

    @staticmethod
    def build() -> Cosign:
        return Cosign(ensure_cosign())


# Local keys, a loopback registry over plain http, and no transparency log.
OFFLINE = ("--allow-insecure-registry", "--allow-http-registry")
SIGN = (*OFFLINE, "--tlog-upload=false")
VERIFY = (*OFFLINE, "--insecure-ignore-tlog=true")
