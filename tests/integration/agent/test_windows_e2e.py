"""Maintenance windows end to end on the real fleet: a wave whose clusters are inside a deny window
waits (the canary wave goes on), says why in the clusters' states, and proceeds when the window ends;
an override recorded with ``syncer override-window`` lets a cluster change at once and survives the
agent's own writes of the sync state (its own ConfigMap key and field manager, on a real apiserver)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from syncer.agent.service import Agent
from syncer.config import load_agent_config
from syncer.config.rollout import load_rollout_policy
from syncer.domain.progress import Step
from syncer.errors import NotFound
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import OVERRIDE_FIELD_MANAGER
from syncer.status.state_store import STATE_CONFIGMAP
from tests.integration.agent.test_agent_e2e import ROLLOUT, Setup, redis_cluster, states
from tests.integration.agent.test_agent_e2e import setup as e2e_setup
from tests.support.agent_config import UNLEASED
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

RC = ("redis.syncer.dev/v1alpha1", "RedisCluster", "sessions")
setup = e2e_setup


def with_deny_window(setup: Setup, root: Path, lasting: float) -> float:
    """The agent restarted with a deny window on tier=prod that opened at the start of this minute
    and lasts until ``lasting`` seconds from now; returns when it ends (epoch seconds)."""
    now = datetime.now(UTC)
    started = now.replace(second=0, microsecond=0)
    duration = int((now - started).total_seconds() + lasting) + 1
    window = {
        "name": "prod-freeze",
        "kind": "deny",
        "schedule": f"{started.minute} {started.hour} * * *",
        "duration": f"{duration}s",
        "clusters": {"matchLabels": {"tier": "prod"}},
    }
    (root / "rollout.yaml").write_text(yaml.safe_dump({**ROLLOUT, "windows": [window]}))
    setup.agent.close()
    setup.agent = Agent(
        replace(load_agent_config(root / "agent.yaml"), rollout=load_rollout_policy(root / "rollout.yaml")),
        setup.settings,
        setup.metrics,
        setup.stop,
        UNLEASED,
        listener=setup.steps.append,
    )
    return started.timestamp() + duration


def live(setup: Setup) -> dict[str, str]:
    found = {}
    for name, client in setup.agent.clients.items():
        try:
            found[name] = client.get(*RC, setup.namespace)["spec"]["version"]
        except NotFound:
            found[name] = ""
    return found


@pytest.mark.slow
def test_a_wave_in_a_deny_window_waits_and_proceeds_when_it_ends(setup: Setup, tmp_path: Path) -> None:
    ends = with_deny_window(setup, tmp_path, lasting=25)
    revision = setup.commit("sessions", [redis_cluster(setup.namespace, "7.2.4")])
    result = setup.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert result.report.message.startswith(
        "outside maintenance window: eu-1: deny window prod-freeze is active"
    ), result.report.message
    assert live(setup) == {"canary": "7.2.4", "eu-1": "", "us-1": ""}
    recorded = states(setup)
    assert recorded["eu-1"].window.startswith("deny window prod-freeze is active")
    assert recorded["canary"].window == ""
    assert setup.metrics.registry.get_sample_value("syncer_cluster_window_open", {"cluster": "eu-1"}) == 0
    assert time.time() < ends, "the window must still have been closed when the pass ran"

    def synced() -> bool:
        outcome = setup.agent.sync_once().report
        return outcome is not None and outcome.outcome is RolloutOutcome.APPLIED

    eventually("the rest wave once the window ends", synced, ends - time.time() + 90, every=2)
    assert time.time() >= ends
    assert live(setup) == {"canary": "7.2.4", "eu-1": "7.2.4", "us-1": "7.2.4"}
    recorded = {n: (s.revision, s.window) for n, s in states(setup).items()}
    assert recorded == dict.fromkeys(("canary", "eu-1", "us-1"), (revision, ""))


def test_an_override_lets_a_cluster_change_now_and_outlives_the_agents_writes(
    setup: Setup, tmp_path: Path
) -> None:
    with_deny_window(setup, tmp_path, lasting=3600)
    setup.commit("sessions", [redis_cluster(setup.namespace, "7.2.4")])
    result = setup.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING

    for cluster in ("eu-1", "us-1"):
        command = [
            sys.executable,
            "-m",
            "syncer",
            "override-window",
            "--config",
            str(tmp_path / "agent.yaml"),
        ]
        command += ["--cluster", cluster, "--reason", "CVE-2026-0001", "--for", "10m"]
        command += ["--state-namespace", setup.settings.state_namespace]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=60, env=os.environ.copy(), check=False
        )
        assert done.returncode == 0, done.stderr
        assert f"{cluster}: may change outside its maintenance windows until" in done.stdout
    setup.steps.clear()
    result = setup.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert live(setup) == {"canary": "7.2.4", "eu-1": "7.2.4", "us-1": "7.2.4"}
    overridden = sorted(e.cluster for e in setup.steps if e.step is Step.WINDOW_OVERRIDDEN)
    assert overridden == ["eu-1", "us-1"]

    # The agent wrote the states several times since; the override is still there, under its manager.
    for name in ("eu-1", "us-1"):
        state = states(setup)[name]
        assert state.window_override == "CVE-2026-0001"
        assert state.window_override_until > time.time() + 60
        configmap = setup.agent.clients[name].get(
            "v1", "ConfigMap", STATE_CONFIGMAP, setup.settings.state_namespace
        )
        managers = {m["manager"] for m in configmap["metadata"]["managedFields"]}
        assert OVERRIDE_FIELD_MANAGER in managers, managers
        events = setup.agent.clients[name].list("v1", "Event", namespace=setup.settings.state_namespace).items
        assert any(e.get("reason") == "MaintenanceWindowOverridden" for e in events)
