"""What a pass counts when git cannot be read (an error, never a rejected revision) and when a revision
is bad (a rejection, counted once): real git, real ssh-keygen signatures."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
import yaml

from syncer.agent.service import Agent
from syncer.config import load_agent_config
from syncer.config.settings import AgentSettings
from syncer.engine.revision import Stage
from syncer.status.metrics import SyncerMetrics
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.agent_config import UNLEASED

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "repo"


def test_an_unreachable_remote_counts_as_an_error_not_a_rejection(tmp_path: Path) -> None:
    write_policy(tmp_path / "trust.yaml", signers=[], keys=[])
    config = {
        "source": {"url": str(tmp_path / "no-such-remote.git"), "cacheDir": str(tmp_path / "cache")},
        "trustPolicy": "trust.yaml",
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    metrics = SyncerMetrics()
    settings = AgentSettings()
    agent = Agent(load_agent_config(tmp_path / "agent.yaml"), settings, metrics, threading.Event(), UNLEASED)
    try:
        for _ in range(3):
            result = agent.sync_once()
            assert result.advance.rejection is not None
            assert result.advance.rejection.stage is Stage.SOURCE
    finally:
        agent.close()
    registry = metrics.registry
    assert registry.get_sample_value("syncer_sync_total", {"result": "error"}) == 3
    assert registry.get_sample_value("syncer_sync_total", {"result": "rejected"}) is None
    assert registry.get_sample_value("syncer_git_poll_total", {"result": "error"}) == 3


def test_a_revision_holding_a_5000_digit_integer_is_counted_rejected_once_and_never_raises(
    tmp_path: Path, ops_key: SshKey
) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    work = GitRepo(tmp_path / "work")
    shutil.copytree(EXAMPLES, work.path, dirs_exist_ok=True)
    sessions = work.path / "base" / "sessions.yaml"
    sessions.write_text(sessions.read_text().replace("shards: 3", "shards: " + "9" * 5000, 1))
    work.commit("shards beyond any integer", {}, sign=ops_key)
    work.git("push", "-q", str(remote), "main")
    write_policy(tmp_path / "trust.yaml", signers=[{"name": "ops", "ssh": ops_key.public_line}], keys=[])
    config = {
        "source": {"url": str(remote), "cacheDir": str(tmp_path / "cache")},
        "trustPolicy": "trust.yaml",
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    metrics = SyncerMetrics()
    agent = Agent(
        load_agent_config(tmp_path / "agent.yaml"), AgentSettings(), metrics, threading.Event(), UNLEASED
    )
    try:
        results = [agent.sync_once() for _ in range(3)]
    finally:
        agent.close()
    for result in results:
        assert result.advance.rejection is not None
        assert result.advance.rejection.stage is Stage.MANIFESTS
        assert "base/sessions.yaml:9:11: yaml-value: integer" in result.advance.rejection.message
    assert [r.new_rejection for r in results] == [True, False, False]
    registry = metrics.registry
    assert registry.get_sample_value("syncer_sync_total", {"result": "rejected"}) == 1
    assert registry.get_sample_value("syncer_git_poll_total", {"result": "changed"}) == 1
    assert registry.get_sample_value("syncer_git_poll_total", {"result": "unchanged"}) == 2
