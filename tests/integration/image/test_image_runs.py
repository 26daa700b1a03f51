"""The built image runs: as uid 10001 on a read-only root, with no compiler, and its ``syncer diff``
and ``syncer sync --once`` reach the real local fleet from inside the container (host network,
kubeconfig mounted read-only)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from syncer import __version__
from syncer.kube import ClusterClient
from tests.integration.conftest import FleetHandle
from tests.integration.image.kit import UID, Image
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.namespaces import delete_namespaces

# The first image test of a run on a new machine makes the debootstrap base (several minutes on two
# busy cores) before it builds the image; later runs find both built.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.image, pytest.mark.timeout(1800)]


def test_the_image_runs_syncer_as_its_numeric_user_on_a_read_only_root(image: Image) -> None:
    version = image.run("--version", entrypoint="syncer")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"syncer, version {__version__}"

    probe = image.run(
        "-c",
        "id -u; id -g; touch /opt/syncer/x 2>&1; touch /tmp/x && echo tmp-writable;"
        " for c in gcc cc g++ make; do command -v $c; done; true",
        entrypoint="/bin/sh",
    )
    lines = probe.stdout.splitlines()
    assert lines[:2] == [str(UID), str(UID)], probe.stdout
    assert "Read-only file system" in lines[2], probe.stdout
    assert lines[3:] == ["tmp-writable"], f"a compiler is in the image: {lines[4:]}"


@pytest.fixture
def fleet_repo(tmp_path: Path, fleet: FleetHandle, ops_key: SshKey, namespace: str) -> Iterator[Path]:
    """A signed remote whose tip holds one Namespace for every cluster and the agent's files, all
    owned by the image's user; paths are the same inside the container as here."""
    prefix = f"{namespace}-img"
    remote = bare_remote(tmp_path / "remote.git")
    work = GitRepo(tmp_path / "work")
    fleet_file = {
        "apiVersion": "syncer.dev/v1alpha1",
        "kind": "Fleet",
        "clusters": [{"name": n} for n in fleet.names],
    }
    work.write({"fleet.yaml": yaml.safe_dump(fleet_file)})
    namespace_doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prefix}}
    work.commit("one namespace", {"base/ns.yaml": yaml.safe_dump(namespace_doc)}, sign=ops_key)
    work.git("push", "-q", str(remote), "main")
    write_policy(tmp_path / "trust.yaml", signers=[{"name": "ops", "ssh": ops_key.public_line}], keys=[])
    rollout = {"waves": [{"name": "all", "percent": 100}], "defaults": {"bake": "0s", "healthTimeout": "30s"}}
    (tmp_path / "rollout.yaml").write_text(yaml.safe_dump(rollout))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(fleet.kubeconfig.read_bytes())
    config = {
        "source": {"url": str(remote), "cacheDir": str(tmp_path / "cache"), "timeoutSeconds": 30},
        "trustPolicy": "trust.yaml",
        "clusters": {n: {"context": n, "kubeconfig": str(kubeconfig)} for n in fleet.names},
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    for path in [tmp_path, *tmp_path.rglob("*")]:
        os.chown(path, UID, UID, follow_symlinks=False)
    yield tmp_path
    for name in fleet.names:
        kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name)
        try:
            delete_namespaces([kube], prefix, f"{prefix}-state", f"{prefix}-lease")
        finally:
            kube.close()


def test_diff_and_sync_once_inside_the_image_reach_the_fleet(
    image: Image, fleet_repo: Path, fleet: FleetHandle, namespace: str
) -> None:
    prefix = f"{namespace}-img"
    kubeconfig = str(fleet_repo / "kubeconfig")
    mounts = (f"{fleet_repo}:{fleet_repo}", f"{kubeconfig}:{kubeconfig}:ro")
    diff = image.run(
        "diff",
        "--repo",
        str(fleet_repo / "remote.git"),
        "--config",
        str(fleet_repo / "agent.yaml"),
        mounts=mounts,
        entrypoint="syncer",
    )
    assert diff.returncode == 1, diff.stdout + diff.stderr
    for name in fleet.names:
        assert name in diff.stdout
    assert prefix in diff.stdout

    synced = image.run(
        "sync",
        "--once",
        "--config",
        str(fleet_repo / "agent.yaml"),
        "--rollout-policy",
        str(fleet_repo / "rollout.yaml"),
        "--state-namespace",
        f"{prefix}-state",
        "--kubeconfig",
        kubeconfig,
        "--lease-context",
        "canary",
        "--lease-namespace",
        f"{prefix}-lease",
        mounts=mounts,
        entrypoint="syncer",
    )
    assert synced.returncode == 0, synced.stdout + synced.stderr
    for name in fleet.names:
        core = client.CoreV1Api(fleet.api(name))
        assert core.read_namespace(prefix).metadata.name == prefix
