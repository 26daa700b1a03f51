"""``syncer rollback`` and ``syncer resume`` as real processes beside a real ``syncer run`` on the real
3-cluster fleet: a rollback to a revision never applied is refused naming what the history holds,
with nothing written; a rollback of the whole fleet to an earlier revision is verified again and
rolled out by the agent, holds across a new commit and an agent restart, shows in status, metrics
and history, and ``syncer resume`` lets the fleet move to the newest revision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from syncer.status.acts import PIN_KEY
from syncer.status.state_store import STATE_CONFIGMAP
from tests.integration.agent.drills import live_version, no_traceback
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.agent.test_agent_process import CLUSTERS, ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


def _syncer(rig: Rig, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "syncer", *args, "--config", str(rig.root / "agent.yaml")]
    command += ["--state-namespace", rig.state_namespace]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)


def _configmaps(rig: Rig) -> dict[str, dict[str, Any]]:
    return {
        n: dict(c.get("v1", "ConfigMap", STATE_CONFIGMAP, rig.state_namespace))
        for n, c in rig.clients.items()
    }


def _pinned_passes(proc: AgentProc, cluster: str) -> int:
    return len([r for r in proc.steps("cluster-pinned") if r.get("cluster") == cluster])


def _versions(rig: Rig) -> dict[str, str]:
    return {n: live_version(c, rig.namespace) for n, c in rig.clients.items()}


@pytest.mark.slow
def test_a_rolled_back_fleet_stays_pinned_across_a_commit_and_a_restart_until_resumed(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        args = rig.args("two-waves.yaml", "--no-leader-elect")
        agent = agents.start("agent", args)
        first = rig.commit("sessions cache 7.2.4", "7.2.4")
        eventually("the first revision healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)
        second = rig.commit("sessions cache 7.2.5", "7.2.5")
        eventually("the second revision healthy", lambda: rig.all_healthy(second), ROLLOUT_TIMEOUT)

        # A signed commit that was never applied anywhere: refused, naming what the history holds.
        never = rig.work.commit("a note never pushed", sign=rig.key)
        before = _configmaps(rig)
        refused = _syncer(rig, "rollback", "--to", never, "--all", "--reason", "try", "--by", "ops")
        assert refused.returncode == 2, refused.stdout
        assert "Traceback" not in refused.stderr
        assert f"{never} was never verified and applied there" in refused.stderr
        assert f"its history holds, newest first: {second[:12]} (healthy), {first[:12]} (healthy)" in (
            refused.stderr
        )
        after = _configmaps(rig)
        assert {n: c["metadata"]["resourceVersion"] for n, c in after.items()} == {
            n: c["metadata"]["resourceVersion"] for n, c in before.items()
        }
        assert not any(PIN_KEY in (c.get("data") or {}) for c in after.values())

        done = _syncer(rig, "rollback", "--to", first[:10], "--all", "--reason", "bad release", "--by", "ops")
        assert done.returncode == 0, done.stderr
        assert f"us-1: pinned to {first} by ops: bad release" in done.stdout
        eventually("the fleet back on the first revision", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)
        assert set(_versions(rig).values()) == {"7.2.4"}

        # A new commit goes nowhere while the pin holds.
        third = rig.commit("sessions cache 7.2.6", "7.2.6")
        eventually(
            "the agent to take the new commit",
            lambda: any(r.get("revision") == third for r in agent.logs()),
            ROLLOUT_TIMEOUT,
        )
        seen = {c: _pinned_passes(agent, c) for c in CLUSTERS}
        eventually(
            "two more passes that kept every cluster pinned",
            lambda: all(_pinned_passes(agent, c) >= seen[c] + 2 for c in CLUSTERS),
            60,
        )
        assert rig.all_healthy(first)
        assert set(_versions(rig).values()) == {"7.2.4"}
        assert agent.metrics().get('syncer_cluster_pinned{cluster="eu-1"}') == 1.0

        # An agent started again after a kill keeps it too: it is read from the clusters.
        agent.kill()
        again = agents.start("again", args)
        eventually(
            "two passes of the new agent that kept every cluster pinned",
            lambda: all(_pinned_passes(again, c) >= 2 for c in CLUSTERS),
            ROLLOUT_TIMEOUT,
        )
        assert rig.all_healthy(first)
        assert set(_versions(rig).values()) == {"7.2.4"}
        status = _syncer(rig, "status", "-o", "json")
        rows = {row["cluster"]: row for row in json.loads(status.stdout)["clusters"]}
        assert {(r["pinned"]["revision"], r["pinned"]["by"]) for r in rows.values()} == {(first, "ops")}
        shown = _syncer(rig, "diff", "--repo", str(rig.remote))
        # Each is planned against its pinned revision, which it runs: nothing is due there.
        held = (
            f"HELD (pinned): the sync puts it on {first[:12]}, not this revision; below is what that "
            f"takes: pinned to {first[:12]} by ops"
        )
        assert shown.stdout.count(held) == 3, shown.stdout + shown.stderr
        history = _syncer(rig, "history", "--cluster", "canary", "-o", "json")
        entries = json.loads(history.stdout)["clusters"][0]["entries"]
        assert [(e["revision"], e["outcome"]) for e in entries] == [
            (first, "healthy"),
            (second, "healthy"),
            (first, "healthy"),
        ]
        assert entries[-1]["signer"] == "ops"
        assert entries[-1]["by"].endswith("for syncer rollback by ops: bad release")

        resumed = _syncer(rig, "resume", "--all")
        assert resumed.returncode == 0, resumed.stderr
        eventually("the fleet on the newest revision", lambda: rig.all_healthy(third), ROLLOUT_TIMEOUT)
        assert set(_versions(rig).values()) == {"7.2.6"}
        no_traceback(agent, again)
