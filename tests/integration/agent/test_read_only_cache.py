"""A real ``syncer run`` whose cache folder is read-only (started without the capability to override
file permissions, as a pod with a read-only volume is): each poll is a failed poll in the metrics,
the error names the folder and is told once, never as a traceback; once the folder is writable the
next poll clones as usual."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.agent.procs import Agents
from tests.integration.agent.runkit import run_args
from tests.integration.verify.kit import GitRepo, bare_remote, write_policy
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

# Without these the process's root user still writes anywhere, whatever a folder's mode says.
NO_PERMISSION_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    procs = Agents(tmp_path)
    try:
        yield procs
    finally:
        procs.close()


def test_a_read_only_cache_is_a_failed_poll_told_once_without_a_traceback(
    tmp_path: Path, agents: Agents
) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    work = GitRepo(tmp_path / "work")
    work.commit("a fleet", {"fleet.yaml": "apiVersion: syncer.dev/v1alpha1\nkind: Fleet\nclusters: []\n"})
    work.git("push", "-q", str(remote), "main")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o555)
    cache.chmod(0o555)
    write_policy(tmp_path / "trust.yaml", signers=[], keys=[])
    config = {"source": {"url": str(remote), "cacheDir": str(cache)}, "trustPolicy": "trust.yaml"}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "rollout.yaml").write_text(yaml.safe_dump({"waves": [{"name": "all", "percent": 100}]}))
    args = run_args(
        tmp_path, "rollout.yaml", tmp_path / "no-kubeconfig", "syncer-system", "--no-leader-elect"
    )
    args[args.index("--interval") + 1] = "1s"

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
