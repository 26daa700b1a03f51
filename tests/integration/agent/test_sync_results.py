"""What a pass counts when git cannot be read: an error, never a rejected revision (real git)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from syncer.agent.service import Agent
from syncer.config import load_agent_config
from syncer.config.settings import AgentSettings
from syncer.engine.revision import Stage
from syncer.status.metrics import SyncerMetrics
from tests.integration.verify.kit import write_policy

pytestmark = pytest.mark.integration


def test_an_unreachable_remote_counts_as_an_error_not_a_rejection(tmp_path: Path) -> None:
    write_policy(tmp_path / "trust.yaml", signers=[], keys=[])
    config = {
        "source": {"url": str(tmp_path / "no-such-remote.git"), "cacheDir": str(tmp_path / "cache")},
        "trustPolicy": "trust.yaml",
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    metrics = SyncerMetrics()
    settings = AgentSettings()
    agent = Agent(load_agent_config(tmp_path / "agent.yaml"), settings, metrics, threading.Event())
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
