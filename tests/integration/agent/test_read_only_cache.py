"""A real ``syncer run`` whose cache folder is read-only (started without the capability to override
file permissions, as a pod with a read-only volume is): each poll is a failed poll in the metrics,
the error names the folder and is told once, never as a traceback; once the folder is writable the
next poll clones as usual. The same holds when the folder turns read-only under a running agent
whose revision is in force: every place the cache is written (the poll, the revision synced after
the pass) fails the same way, one counted error per poll."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.agent.procs import Agents
from tests.integration.agent.runkit import run_args
from tests.integration.agent.test_agent_process import Rig, rig
from tests.integration.verify.kit import GitRepo, bare_remote, write_policy
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["rig"]  # fixture

# Without these the process's root user still writes anywhere, whatever a folder's mode says.
NO_PERMISSION_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    procs = Agents(tmp_path)
    try:
        yield procs
    finally:
        procs.close()


def _agent_args(tmp_path: Path, cache: Path) -> list[str]:
    """An agent of a fleet without clusters on a local remote (one commit), its cache in ``cache``,
    polling every second."""
    remote = bare_remote(tmp_path / "remote.git")
    work = GitRepo(tmp_path / "work")
    work.commit("a fleet", {"fleet.yaml": "apiVersion: syncer.dev/v1alpha1\nkind: Fleet\nclusters: []\n"})
    work.git("push", "-q", str(remote), "main")
    write_policy(tmp_path / "trust.yaml", signers=[], keys=[])
    config = {"source": {"url": str(remote), "cacheDir": str(cache)}, "trustPolicy": "trust.yaml"}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "rollout.yaml").write_text(yaml.safe_dump({"waves": [{"name": "all", "percent": 100}]}))
    args = run_args(
        tmp_path, "rollout.yaml", tmp_path / "no-kubeconfig", "syncer-system", "--no-leader-elect"
    )
    args[args.index("--interval") + 1] = "1s"
    return args


def test_a_read_only_cache_is_a_failed_poll_told_once_without_a_traceback(
    tmp_path: Path, agents: Agents
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o555)
    cache.chmod(0o555)
    args = _agent_args(tmp_path, cache)

    with agents.shown_on_failure():
        proc = agents.start("agent", args, prefix=NO_PERMISSION_OVERRIDE)

        def failed_polls() -> float:
            return proc.metrics().get('syncer_git_poll_total{result="error"}', 0)

        eventually("four failed polls", lambda: failed_polls() >= 4, 60)
        metrics = proc.metrics()
        assert metrics.get('syncer_sync_total{result="error"}') == 1, "told once, not once per poll"
        assert "Traceback" not in proc.stderr_path.read_text()
        told = [r for r in proc.logs() if str(cache) in str(r)]
        assert len(told) == 1, told
        assert f"the source cache {cache} cannot be used: {cache}/.syncer.lock: Permission denied" in str(
            told[0]
        )

        cache.chmod(0o755)
        eventually("a clone once the cache is writable", (cache / "repo.git" / "HEAD").is_file, 60)
        assert proc.running()
        assert "Traceback" not in proc.stderr_path.read_text()


def _read_only(root: Path) -> dict[Path, int]:
    """Take write permission from every folder and file under ``root`` (symlinks left alone), as a
    read-only volume would; returns the modes to give back."""
    modes = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for path in [Path(dirpath), *(Path(dirpath, n) for n in [*dirnames, *filenames])]:
            if path not in modes and not path.is_symlink():
                modes[path] = stat.S_IMODE(path.lstat().st_mode)
    for path, mode in modes.items():
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return modes


def test_a_cache_turned_read_only_under_a_running_agent_is_one_counted_error_per_poll(
    rig: Rig, agents: Agents
) -> None:
    # A signed revision of one Namespace, rolled out to the fleet: every later pass has nothing to
    # do, and records the revision as synced in the cache after it.
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rig.namespace}}
    rig.work.commit("a namespace", {"base/objects.yaml": yaml.safe_dump(namespace)}, sign=rig.key)
    rig.work.git("push", "-q", str(rig.remote), "main")
    cache = rig.root / "cache"
    args = rig.args("two-waves.yaml", "--no-leader-elect")
    args[args.index("--interval") + 1] = "1s"

    with agents.shown_on_failure():
        proc = agents.start("agent", args, prefix=NO_PERMISSION_OVERRIDE)

        def polls(result: str) -> float:
            return proc.metrics().get(f'syncer_git_poll_total{{result="{result}"}}', 0)

        # The revision is in force and recorded as synced in the cache.
        eventually("a pass that synced", lambda: proc.said("sync "), 60)
        assert polls("error") == 0
        start = len(proc.logs())
        modes = _read_only(cache)
        try:
            eventually("five failed polls", lambda: polls("error") >= 5, 60)
            errors = proc.metrics().get('syncer_sync_total{result="error"}')
            assert errors == 1, "told once, not once per poll"
            failed = polls("error")
            eventually("three more failed polls", lambda: polls("error") >= failed + 3, 30)
            assert proc.metrics().get('syncer_sync_total{result="error"}') == 1
            assert "Traceback" not in proc.stderr_path.read_text(), proc.describe(80)
            told = [r for r in proc.logs()[start:] if str(cache) in str(r)]
            assert len(told) == 1, told
            assert f"the source cache {cache} cannot be used" in str(told[0])
            assert "Permission denied" in str(told[0])
        finally:
            for path, mode in sorted(modes.items(), key=lambda item: len(item[0].parts)):
                path.chmod(mode)
        # Writable again: the polls answer again and count no more errors.
        failed = polls("error")
        unchanged = polls("unchanged")
        eventually("two polls that answer", lambda: polls("unchanged") >= unchanged + 2, 30)
        assert polls("error") <= failed + 1  # a poll under way while the folder was given back
        assert proc.running()
        assert "Traceback" not in proc.stderr_path.read_text()
