"""What a real ``syncer run`` tells about its passes, on the real 3-cluster fleet: a webhook that
comes while a pass runs is answered as queued and its poll runs as soon as the pass ends (not at the
next interval); a pass whose only writes repaired drift counts as ``repaired``, not ``applied``."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

import pytest
import yaml

from syncer.domain.sync_state import SyncPhase
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from tests.integration.agent.drills import live_version
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.agent.test_agent_process import RC_API, ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

__all__ = ["agents", "rig"]  # the fixtures used here

SECRET = "s3cret"
BAKE = 12  # seconds the one wave bakes: the pass is still running while the test pushes and calls
ONE_BAKING_WAVE = {
    "waves": [{"name": "all", "percent": 100}],
    "defaults": {"maxConcurrent": 3, "healthTimeout": "60s", "bake": f"{BAKE}s"},
    "rollback": False,
}


def call_hook(proc: AgentProc) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", proc.port(), timeout=5)
    try:
        conn.request("POST", "/hooks/git", headers={"Authorization": f"Bearer {SECRET}"})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def every_cluster_at(rig: Rig, revision: str, phase: SyncPhase) -> bool:
    return all((s.revision, s.phase) == (revision, phase) for s in rig.states().values())


@pytest.mark.slow
def test_a_webhook_during_a_pass_is_answered_queued_and_its_poll_runs_as_soon_as_the_pass_ends(
    rig: Rig, agents: Agents, tmp_path: Path
) -> None:
    rig.start_controllers()
    (rig.root / "baking.yaml").write_text(yaml.safe_dump(ONE_BAKING_WAVE))
    (tmp_path / "hook-secret").write_text(SECRET)
    args = rig.args("baking.yaml", "--no-leader-elect", "--hook-secret-file", str(tmp_path / "hook-secret"))
    args[args.index("--interval") + 1] = "10m"  # only the webhook can start a second poll in time
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        agent = agents.start("agent", args)
        # Every cluster applied and the wave baking: the first pass is still running.
        eventually("the first revision applied", lambda: every_cluster_at(rig, first, SyncPhase.APPLIED), 60)
        second = rig.commit("newer redis", "7.2.5")
        status, body = call_hook(agent)
        assert status == 202, body
        queued = {"queued": True, "reason": "a pass is running; the poll runs as soon as it ends"}
        assert json.loads(body) == queued
        assert not every_cluster_at(rig, first, SyncPhase.HEALTHY)  # the pass had not ended yet

        eventually("the first pass to end", lambda: every_cluster_at(rig, first, SyncPhase.HEALTHY), 60, 0.1)
        ended = time.monotonic()
        # The queued poll takes the newer revision at once: applied well within one bake, where the
        # next scheduled poll would be 10 minutes away.
        eventually(
            "the newer revision applied", lambda: {s.revision for s in rig.states().values()} == {second}, 30
        )
        took = time.monotonic() - ended
        assert took < BAKE, took
        eventually("every cluster healthy on it", lambda: rig.all_healthy(second), ROLLOUT_TIMEOUT)
        assert {live_version(c, rig.namespace) for c in rig.clients.values()} == {"7.2.5"}
        samples = agent.metrics()
        assert samples['syncer_git_poll_total{result="changed"}'] == 2
        # Now no pass runs: the webhook starts one.
        status, body = call_hook(agent)
        assert (status, json.loads(body)) == (202, {"queued": False, "reason": "a poll starts now"})
        assert agent.running()


def _uid(client: ClusterClient, namespace: str) -> str:
    try:
        return str(client.get(RC_API, "RedisCluster", "sessions", namespace)["metadata"]["uid"])
    except NotFound:
        return ""


def test_a_pass_that_only_repairs_drift_counts_as_repaired_not_applied(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        agent = agents.start("agent", rig.args("two-waves.yaml", "--no-leader-elect"))
        eventually("every cluster healthy", lambda: rig.all_healthy(revision), 2 * ROLLOUT_TIMEOUT)
        # A pass after the rollout finds everything in place.
        before = eventually(
            "a pass with nothing to do",
            lambda: (s := agent.metrics()).get('syncer_sync_total{result="unchanged"}', 0) >= 1 and s,
            30,
        )
        applied = before['syncer_sync_total{result="applied"}']

        eu = rig.clients["eu-1"]
        uid = _uid(eu, rig.namespace)
        eu.delete(RC_API, "RedisCluster", "sessions", rig.namespace)
        # The next poll's pass watches the passed waves and re-creates it (drift repair is 10 min away).
        eventually("eu-1's RedisCluster back", lambda: _uid(eu, rig.namespace) not in ("", uid), 60, 0.5)
        after = eventually(
            "the repairing pass counted",
            lambda: (s := agent.metrics()).get('syncer_sync_total{result="repaired"}', 0) >= 1 and s,
            15,
        )
        assert after['syncer_sync_total{result="applied"}'] == applied
        assert after['syncer_apply_objects_total{action="create",cluster="eu-1"}'] >= 1
        assert agent.running()
