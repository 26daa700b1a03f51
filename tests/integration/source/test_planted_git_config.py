"""Git configuration planted where the caller runs syncer never reaches syncer's git processes.

Real ``syncer verify``, ``render``, ``diff`` and ``sync --once`` processes run from a folder that is a
repository whose ``.git/config`` rewrites the fleet repository's URL and names programs for git to
start (a proxy for ``git://``, an fsmonitor, an ssh command, a pack-objects hook, a credential
helper, aliases), with the same planted in ``$HOME/.gitconfig``, ``$XDG_CONFIG_HOME/git/config``, a
system file named by ``GIT_CONFIG_SYSTEM`` and in ``GIT_CONFIG_PARAMETERS`` and ``GIT_CONFIG_COUNT``. Every
planted program writes a marker file; none may appear, and each command must judge, render or apply
the real repository's tip, not the one a rewritten URL leads to.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from syncer.kube import ClusterClient
from tests.integration.conftest import FleetHandle
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.namespaces import delete_namespaces

pytestmark = pytest.mark.integration

_LOCATIONS = ("cwd", "home", "xdg", "system", "parameters", "count")


@dataclass(frozen=True)
class Planted:
    """The fleet repository, the tip it really has, and the caller's folder and environment."""

    remote: Path
    tip: str
    real_namespace: str
    hostile_namespace: str
    caller: Path
    env: dict[str, str]
    markers: Path
    root: Path

    def clear(self) -> None:
        for marker in self.markers.iterdir():
            marker.unlink()

    def fired(self) -> list[str]:
        """What the planted programs wrote: one line per run, naming where it was planted."""
        return sorted(f"{p.name}: {p.read_text().strip()}" for p in self.markers.iterdir())

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``syncer <args>`` as a process started from the caller's folder with its environment."""
        return subprocess.run(
            [sys.executable, "-m", "syncer", *args],
            cwd=self.caller,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )


def _fleet_repo(path: Path, remote: Path, clusters: list[str], namespace: str, key: SshKey) -> str:
    work = GitRepo(path)
    fleet_file = {
        "apiVersion": "syncer.dev/v1alpha1",
        "kind": "Fleet",
        "clusters": [{"name": n} for n in clusters],
    }
    work.write({"fleet.yaml": yaml.safe_dump(fleet_file)})
    document = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    tip = work.commit("one namespace", {"base/ns.yaml": yaml.safe_dump(document)}, sign=key)
    work.git("push", "-q", str(remote), "main")
    return tip


def _program(root: Path, location: str, markers: Path) -> Path:
    script = root / f"planted-{location}.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {markers / location}\nexit 1\n')
    script.chmod(0o755)
    return script


def _config(program: Path, rewrite_to: str, remote: Path) -> str:
    return (
        f"[core]\n\tgitProxy = {program}\n\tfsmonitor = {program}\n\tsshCommand = {program}\n"
        f"[uploadpack]\n\tpackObjectsHook = {program}\n"
        f"[credential]\n\thelper = !{program}\n"
        f"[alias]\n\tclone = !{program}\n\tls-remote = !{program}\n\tfetch = !{program}\n"
        f'[url "{rewrite_to}"]\n\tinsteadOf = {remote}\n'
    )


def _prove_the_plant_is_live(planted: Planted) -> None:
    """Git run as a user would, from that folder, starts the planted proxy (the folder's own config
    alone) or is led to the hostile repository (everything planted): what syncer must not do."""

    def ls_remote(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        argv = ["git", "ls-remote", str(planted.remote)]
        return subprocess.run(argv, cwd=planted.caller, env=env, capture_output=True, text=True, check=False)

    only_folder = {k: v for k, v in planted.env.items() if not k.startswith("GIT_")}
    only_folder.update({"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})
    done = ls_remote(only_folder)
    assert done.returncode != 0
    assert [line.split(":")[0] for line in planted.fired()] == ["cwd"]
    done = ls_remote(planted.env)
    assert done.returncode == 0, done.stderr
    assert planted.tip not in done.stdout
    planted.clear()


@pytest.fixture(scope="module")
def planted(
    tmp_path_factory: pytest.TempPathFactory, fleet: FleetHandle, ops_key: SshKey
) -> Iterator[Planted]:
    root = tmp_path_factory.mktemp("planted").resolve()
    prefix = f"planted-{os.getpid()}"
    remote = bare_remote(root / "remote.git")
    tip = _fleet_repo(root / "work", remote, fleet.names, f"{prefix}-real", ops_key)
    hostile = bare_remote(root / "hostile.git")
    _fleet_repo(root / "hostile-work", hostile, fleet.names, f"{prefix}-hostile", ops_key)
    markers = root / "markers"
    markers.mkdir()
    programs = {loc: _program(root, loc, markers) for loc in _LOCATIONS}

    caller = GitRepo(root / "caller").path  # the folder syncer is started from: a repository
    # A git:// URL makes git start the planted proxy; elsewhere the URL leads to the hostile repository.
    own = caller / ".git" / "config"
    own.write_text(own.read_text() + _config(programs["cwd"], "git://evil.invalid/fleet", remote))
    home = root / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text(_config(programs["home"], str(hostile), remote))
    (home / ".config" / "git" / "config").write_text(_config(programs["xdg"], str(hostile), remote))
    system = root / "system-gitconfig"
    system.write_text(_config(programs["system"], str(hostile), remote))

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_SYSTEM": str(system),
            "GIT_CONFIG_PARAMETERS": (
                f"'url.{hostile}.insteadof'='{remote}' 'core.gitproxy'='{programs['parameters']}'"
            ),
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "uploadpack.packObjectsHook",
            "GIT_CONFIG_VALUE_0": str(programs["count"]),
            "GIT_CONFIG_KEY_1": "core.fsmonitor",
            "GIT_CONFIG_VALUE_1": str(programs["count"]),
        }
    )
    made = Planted(remote, tip, f"{prefix}-real", f"{prefix}-hostile", caller, env, markers, root)
    _prove_the_plant_is_live(made)
    yield made
    for name in fleet.names:
        api = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name)
        try:
            delete_namespaces([api], f"{prefix}-real", f"{prefix}-hostile", f"{prefix}-state")
        finally:
            api.close()


@pytest.fixture(autouse=True)
def _no_markers_yet(planted: Planted) -> Iterator[None]:
    planted.clear()
    yield
    planted.clear()


def test_verify_judges_the_real_tip_and_runs_nothing_planted(planted: Planted, ops_key: SshKey) -> None:
    policy = write_policy(
        planted.root / "trust.yaml", signers=[{"name": "ops", "ssh": ops_key.public_line}], keys=[]
    )
    done = planted.run("verify", "--repo", str(planted.remote), "--policy", str(policy))
    assert planted.fired() == []
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"trusted: {planted.tip}" in done.stdout


def test_render_renders_the_real_tip_and_runs_nothing_planted(planted: Planted) -> None:
    done = planted.run("render", "--repo", str(planted.remote))
    assert planted.fired() == []
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"name: {planted.real_namespace}" in done.stdout
    assert planted.hostile_namespace not in done.stdout


def test_diff_diffs_the_real_tip_and_runs_nothing_planted(planted: Planted) -> None:
    done = planted.run("diff", "--repo", str(planted.remote), "--offline")
    assert planted.fired() == []
    assert done.returncode == 1, done.stdout + done.stderr  # 1: the revision would change something
    assert planted.real_namespace in done.stdout
    assert planted.tip[:12] in done.stdout
    assert planted.hostile_namespace not in done.stdout


def test_a_sync_applies_the_real_tip_and_runs_nothing_planted(
    planted: Planted, fleet: FleetHandle, ops_key: SshKey
) -> None:
    write_policy(planted.root / "trust.yaml", signers=[{"name": "ops", "ssh": ops_key.public_line}], keys=[])
    rollout = {"waves": [{"name": "all", "percent": 100}], "defaults": {"bake": "0s", "healthTimeout": "30s"}}
    (planted.root / "rollout.yaml").write_text(yaml.safe_dump(rollout))
    config = {
        "source": {"url": str(planted.remote), "cacheDir": str(planted.root / "cache"), "timeoutSeconds": 30},
        "trustPolicy": "trust.yaml",
        "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in fleet.names},
    }
    (planted.root / "agent.yaml").write_text(yaml.safe_dump(config))
    state_namespace = planted.real_namespace.replace("-real", "-state")
    done = planted.run(
        "sync",
        "--once",
        "--config",
        str(planted.root / "agent.yaml"),
        "--rollout-policy",
        str(planted.root / "rollout.yaml"),
        "--kubeconfig",
        str(fleet.kubeconfig),
        "--state-namespace",
        state_namespace,
    )
    assert planted.fired() == []
    assert done.returncode == 0, done.stdout + done.stderr
    for name in fleet.names:
        core = client.CoreV1Api(fleet.api(name))
        core.read_namespace(planted.real_namespace)
        with pytest.raises(ApiException) as missing:
            core.read_namespace(planted.hostile_namespace)
        assert missing.value.status == 404
        states = core.list_namespaced_config_map(state_namespace).items
        assert any(planted.tip in yaml.safe_dump(cm.data) for cm in states), name
