"""A pin obeys the guard policy like any revision: the pinned revision is rebuilt from git, verified
and judged by the guards again before anything is applied, so a rollback that would lower the Redis
version is not applied and the clusters stay where they are (on the real fleet, ``syncer rollback``
as a real process, the agent's pass in process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from syncer.domain.progress import Step
from syncer.rollout.moves import RolloutOutcome
from tests.integration.agent.test_agent_e2e import Setup, redis_cluster, states
from tests.integration.agent.test_guards_e2e import guarded, live_versions, setup

pytestmark = pytest.mark.integration
__all__ = ["guarded", "setup"]  # fixtures


def test_a_pin_the_guards_refuse_is_not_applied(guarded: Setup, tmp_path: Path) -> None:
    good = guarded.commit("sessions on 7.2.5", [redis_cluster(guarded.namespace, "7.2.5")])
    result = guarded.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    newer = guarded.commit("sessions on 7.4.1", [redis_cluster(guarded.namespace, "7.4.1")])
    result = guarded.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report

    command = [sys.executable, "-m", "syncer", "rollback", "--config", str(tmp_path / "agent.yaml")]
    command += ["--state-namespace", guarded.settings.state_namespace, "--to", good, "--cluster", "eu-1"]
    command += ["--reason", "back to 7.2.5", "--by", "ops"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr

    guarded.steps.clear()
    guarded.agent.sync_once()
    assert live_versions(guarded) == {"canary": "7.4.1", "eu-1": "7.4.1", "us-1": "7.4.1"}
    assert states(guarded)["eu-1"].revision == newer
    unavailable = [e for e in guarded.steps if e.step is Step.LAST_GOOD_UNAVAILABLE]
    assert [e.revision for e in unavailable] == [good]
    assert "rule no-redis-downgrade failed on eu-1" in unavailable[0].error
    refused = [(e.cluster, e.revision) for e in guarded.steps if e.step is Step.PIN_UNAVAILABLE]
    assert refused == [("eu-1", good)]
