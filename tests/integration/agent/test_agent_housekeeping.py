"""Real ``syncer run`` processes on the real fleet, for the faults that build up over days: an idle
agent's Events fold into series instead of one per poll, a git lock file left by a killed git does
not block the next agent, and every log line of an embedded controller names its cluster."""

from __future__ import annotations

import signal
import subprocess
from collections import Counter

import pytest

from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import CLUSTERS, RC_API, ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.integration.source.test_cache_recovery import kill_git_holding_a_ref_lock
from tests.integration.verify.kit import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


def passes(text: str) -> int:
    """The pass count /readyz reports ("leader; 12 pass(es)")."""
    return int(text.split(";")[1].split(maxsplit=1)[0])


@pytest.mark.slow
def test_an_idle_agent_folds_its_events_and_its_controllers_name_their_cluster(
    rig: Rig, agents: Agents
) -> None:
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        embedded = ["--no-leader-elect", "--controller-every-cluster", "--watch-namespace", rig.namespace]
        args = rig.args("two-waves.yaml", *embedded)
        args[args.index("--interval") + 1] = "1s"
        proc = agents.start("agent", args)
        proc.port()
        eventually("every cluster healthy", lambda: rig.all_healthy(revision), ROLLOUT_TIMEOUT)
        at_healthy = passes(proc.get("/readyz")[1])
        eventually("20 more passes", lambda: passes(proc.get("/readyz")[1]) >= at_healthy + 20, 90)

        proc.send(signal.SIGTERM)  # writes the series' counts not written yet
        try:
            assert proc.popen.wait(timeout=40) == 0
        except subprocess.TimeoutExpired:
            pytest.fail("the agent did not stop on SIGTERM")

        for name, client in rig.clients.items():
            events = client.list("events.k8s.io/v1", "Event", namespace=rig.state_namespace).items
            ours = [e for e in events if e.get("reportingController") == "syncer.dev/agent"]
            kinds = Counter((e["reason"], e["note"]) for e in ours)
            # One Event per distinct thing that happened, however many passes repeated it.
            assert all(n == 1 for n in kinds.values()), (name, kinds)
            assert len(ours) <= 6, (name, sorted(kinds))
            assert rig.clients[name].get(RC_API, "RedisCluster", "sessions", rig.namespace)

        records = [r for r in proc.logs() if str(r.get("logger", "")).startswith("syncer.controller")]
        assert records
        assert {r.get("cluster") for r in records} == set(CLUSTERS), Counter(
            r.get("cluster") for r in records
        )


@pytest.mark.slow
def test_a_git_lock_left_by_a_killed_git_does_not_block_the_next_agent(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        first_revision = rig.commit("sessions cache", "7.2.4")
        first = agents.start("first", rig.args("two-waves.yaml", "--no-leader-elect"))
        eventually("every cluster healthy", lambda: rig.all_healthy(first_revision), ROLLOUT_TIMEOUT)
        first.kill()
        git_dir = rig.root / "cache" / "repo.git"
        lock = kill_git_holding_a_ref_lock(git_dir, "refs/syncer/fetched", rig.work.env)
        second_revision = rig.commit("newer redis", "7.2.5")

        second = agents.start("second", rig.args("two-waves.yaml", "--no-leader-elect"))
        eventually("every cluster healthy again", lambda: rig.all_healthy(second_revision), ROLLOUT_TIMEOUT)
        assert not lock.exists()
        for name, client in rig.clients.items():
            assert (
                client.get(RC_API, "RedisCluster", "sessions", rig.namespace)["spec"]["version"] == "7.2.5"
            ), name
        fetched = run(["git", "rev-parse", "refs/syncer/fetched"], env=rig.work.env, cwd=git_dir).strip()
        assert fetched == second_revision
        assert second.running()
