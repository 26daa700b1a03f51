"""A real ``syncer run`` and a revision that fails on the canary for a live cause: a RedisCluster
another field manager made first, with another version. The canary remembers a live failure, the
agent writes nothing over that object poll after poll and never goes past the canary; once the
object is removed, the same agent applies the same revision by itself, everywhere.
"""

from __future__ import annotations

import time

import pytest

from syncer.domain.applied import FIELD_MANAGER
from syncer.domain.changeset import FailureCause
from syncer.kube import ApplyOptions
from tests.integration.agent.drills import FAST, live_version, no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import ROLLOUT_TIMEOUT, Rig, agents, redis_cluster, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

RC_API = "redis.syncer.dev/v1alpha1"
BY_HAND = "by-hand"
OBSERVED = 6.0  # seconds (three polls of 2 s) watched while the object stands in the way


def managers(rig: Rig) -> set[str]:
    live = rig.clients["canary"].get(RC_API, "RedisCluster", "sessions", rig.namespace)
    return {
        m["manager"] for m in live["metadata"].get("managedFields", []) if m.get("subresource") != "status"
    }


def test_a_live_failure_holds_the_agent_at_the_canary_until_the_object_in_the_way_is_gone(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    canary = rig.clients["canary"]
    canary.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rig.namespace}})
    canary.apply(redis_cluster(rig.namespace, "7.2.3"), ApplyOptions(field_manager=BY_HAND))
    policy = write_policy(rig, "fast.yaml", FAST)
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        proc = agents.start("agent", rig.args(policy, "--no-leader-elect"))

        def failed_live() -> bool:
            state = rig.states()["canary"]
            return any(f.revision == revision and f.cause is FailureCause.LIVE for f in state.failures)

        eventually("the canary to record a live failure", failed_live, ROLLOUT_TIMEOUT)
        deadline = time.monotonic() + OBSERVED
        while time.monotonic() < deadline:  # poll after poll: nothing written over the object
            assert live_version(canary, rig.namespace) == "7.2.3"
            assert BY_HAND in managers(rig)
            assert FIELD_MANAGER not in managers(rig), "syncer wrote over the object in the way"
            assert live_version(rig.clients["eu-1"], rig.namespace) == ""
            time.sleep(0.5)

        canary.delete(RC_API, "RedisCluster", "sessions", rig.namespace)
        eventually("the object in the way gone", lambda: live_version(canary, rig.namespace) == "", 60)
        done = eventually(
            "every cluster healthy on the revision", lambda: rig.all_healthy(revision), 3 * ROLLOUT_TIMEOUT
        )
        for name, client in rig.clients.items():
            assert live_version(client, rig.namespace) == "7.2.4", name
            assert done[name].last_good == revision, name
        assert proc.running()
        no_traceback(proc)
