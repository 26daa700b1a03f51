"""``syncer suspend`` and ``syncer resume`` as real processes beside a real ``syncer run`` on the real
fleet, judged by what the clusters hold and what their apiservers audited:

- a cluster suspended while a rollout is in flight is never written (its RedisCluster and recorded
  revision stay), its wave waits with the reason, status and /metrics say so; resume completes it;
- with every cluster suspended, an object deleted out of band is not repaired; resume repairs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from devfleet import audit
from syncer.domain.sync_state import SyncPhase
from syncer.errors import NotFound
from tests.integration.agent.drills import live_version, no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import RC_API, ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


def _syncer(rig: Rig, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "syncer", *args, "--config", str(rig.root / "agent.yaml")]
    command += ["--state-namespace", rig.state_namespace]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _rc_writes(rig: Rig, cluster: str, since: datetime) -> list[audit.AuditedWrite]:
    """Writes to the rig's RedisClusters that the apiserver stored (dry runs and status left out)."""
    return [
        w
        for w in audit.writes(rig.fleet.state, cluster)
        if w.resource == "redisclusters"
        and w.namespace == rig.namespace
        and not w.dry_run
        and not w.subresource
        and w.verb in {"create", "patch", "update"}
        and w.at >= since
    ]


@pytest.mark.slow
def test_a_cluster_suspended_mid_rollout_is_never_written_and_resume_completes_it(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        # The eu wave bakes long enough for the suspension to land while the rollout is in flight. The
        # first revision, the fleet's starting point, is rolled out by an agent whose waves bake briefly.
        waves: list[dict[str, object]] = [
            {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
            {"name": "eu", "percent": 67, "selector": {"matchLabels": {"region": "eu"}}},
            {"name": "us", "percent": 100, "selector": {"matchLabels": {"region": "us"}}},
        ]
        brief = {
            "waves": waves,
            "defaults": {"maxConcurrent": 1, "healthTimeout": "60s", "bake": "1s"},
            "rollback": False,
        }
        slow_eu = {**brief, "waves": [waves[0], {**waves[1], "bake": "15s"}, waves[2]]}
        first = rig.commit("sessions cache", "7.2.4")
        before = agents.start("before", rig.args(write_policy(rig, "brief.yaml", brief), "--no-leader-elect"))
        eventually("every cluster healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)
        no_traceback(before)
        before.kill()

        agent = agents.start(
            "agent", rig.args(write_policy(rig, "slow-eu.yaml", slow_eu), "--no-leader-elect")
        )
        second = rig.commit("sessions cache 7.2.5", "7.2.5")
        eventually("the canary on the new commit", lambda: rig.between_waves(second), ROLLOUT_TIMEOUT)
        since = datetime.now(UTC)
        done = _syncer(rig, "suspend", "--cluster", "us-1", "--reason", "incident 42", "--by", "ops")
        assert done.returncode == 0, done.stderr
        assert "us-1: suspended by ops: incident 42" in done.stdout

        # The eu wave finishes; the us wave waits for us-1 with the reason, poll after poll.
        eventually(
            "eu-1 healthy on the new commit",
            lambda: (s := rig.states()["eu-1"]).revision == second and s.phase is SyncPhase.HEALTHY,
            ROLLOUT_TIMEOUT,
        )
        eventually(
            "the agent to say why the us wave waits",
            lambda: any(
                "suspended: us-1: suspended by ops" in str(r.get("detail")) for r in agent.steps("gate-wait")
            ),
            60,
        )
        assert live_version(rig.clients["us-1"], rig.namespace) == "7.2.4"
        assert _rc_writes(rig, "us-1", since) == []
        recorded = rig.states()["us-1"]
        assert (recorded.revision, recorded.suspension.reason, recorded.suspension.by) == (
            first,
            "incident 42",
            "ops",
        )
        assert agent.metrics().get('syncer_cluster_suspended{cluster="us-1"}') == 1.0
        status = _syncer(rig, "status", "-o", "json")
        rows = {row["cluster"]: row for row in json.loads(status.stdout)["clusters"]}
        assert rows["us-1"]["suspended"]["reason"] == "incident 42"
        assert rows["eu-1"]["suspended"] is None

        resumed = _syncer(rig, "resume", "--cluster", "us-1")
        assert resumed.returncode == 0, resumed.stderr
        eventually(
            "every cluster healthy on the new commit", lambda: rig.all_healthy(second), ROLLOUT_TIMEOUT
        )
        assert live_version(rig.clients["us-1"], rig.namespace) == "7.2.5"
        no_traceback(agent)


def test_with_every_cluster_suspended_drift_is_not_repaired_until_resumed(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        agent = agents.start(
            "agent", rig.args("two-waves.yaml", "--no-leader-elect", "--drift-interval", "2s")
        )
        eventually("every cluster healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)
        done = _syncer(rig, "suspend", "--all", "--reason", "freeze", "--by", "ops")
        assert done.returncode == 0, done.stderr
        since = datetime.now(UTC)
        client = rig.clients["canary"]
        client.delete(RC_API, "RedisCluster", "sessions", rig.namespace)

        def gone() -> bool:
            try:
                client.get(RC_API, "RedisCluster", "sessions", rig.namespace)
            except NotFound:
                return True
            return False

        eventually("the RedisCluster gone", gone, 60)
        eventually(
            "two drift checks that found it and waited",
            lambda: (
                len([r for r in agent.steps("drift-repair-waiting") if r.get("cluster") == "canary"]) >= 2
            ),
            60,
        )
        assert gone()
        # (The controllers' removal of the finalizer is a patch of the deleted object; a repair is a
        # creation.)
        assert [w for w in _rc_writes(rig, "canary", since) if w.code == 201] == []
        resumed = _syncer(rig, "resume", "--all")
        assert resumed.returncode == 0, resumed.stderr
        eventually("the RedisCluster repaired", lambda: not gone(), 60)
        no_traceback(agent)
