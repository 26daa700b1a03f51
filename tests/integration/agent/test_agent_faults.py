"""Real ``syncer run`` processes on the real fleet, drilled through the faults of a first week in
production, each judged by what the clusters record and what runs in them:

- a cluster that turns unhealthy after its rollout (its RedisCluster deleted out of band) is
  degraded and repaired, never halted, and the revision in force is not marked bad;
- a failing wave resumed after a restart rolls each cluster back to the revision it ran healthy,
  never to the failing revision;
- a forbidden cluster is reported while the others get the commit and their drift repaired, and it
  catches up once it is allowed again;
- a replica whose Lease cluster goes away stays up, serving HTTP as a standby, and resumes;
- a leader frozen past its lease (SIGSTOP) and then resumed writes nothing: the new leader's
  revision and states stay;
- an agent started while git is unreachable repairs drift and records health from the revision the
  clusters record (checked again from its cache), and takes a new commit once git is back.
"""

from __future__ import annotations

import signal
import time

import pytest

from syncer.domain.sync_state import SyncPhase
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from syncer.status.state_store import FENCING_TOKEN, STATE_CONFIGMAP
from tests.integration.agent.drills import (
    FAST,
    HEALTH_TIMEOUT,
    binding,
    commit_per_cluster,
    lease_flags,
    live_version,
    no_traceback,
    own_identity,
    remove,
    working_again,
    write_policy,
)
from tests.integration.agent.procs import Agents, eventually
from tests.integration.agent.test_agent_process import LABELS, RC_API, ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.integration.conftest import FleetHandle

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


def _recreated_and_ready(client: ClusterClient, namespace: str, uid: str) -> bool:
    """The RedisCluster ``sessions`` exists again under another uid than ``uid`` and is Ready."""
    try:
        rc = client.get(RC_API, "RedisCluster", "sessions", namespace)
    except NotFound:
        return False
    ready = [c for c in (rc.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"]
    return rc["metadata"]["uid"] != uid and bool(ready) and ready[0].get("status") == "True"


APISERVER = "kube-apiserver"
WORKLOAD_CHAIN = ("kube-controller-manager", "kube-scheduler", "kwok")


def _quiet(_: str) -> None:
    return None


@pytest.mark.slow
def test_a_cluster_unhealthy_after_its_rollout_is_repaired_not_halted(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    policy = write_policy(rig, "fast.yaml", FAST)
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        args = rig.args(policy, "--no-leader-elect")
        args[args.index("--drift-interval") + 1] = "3s"
        proc = agents.start("agent", args)
        done = eventually("every cluster healthy", lambda: rig.all_healthy(revision), 3 * ROLLOUT_TIMEOUT)
        # Past the health timeout of every wave: of the last wave's apply, the latest.
        past = max(s.applied_at for s in done.values()) + HEALTH_TIMEOUT + 1
        time.sleep(max(0.0, past - time.time()))

        eu = rig.clients["eu-1"]
        uid = eu.get(RC_API, "RedisCluster", "sessions", rig.namespace)["metadata"]["uid"]
        eu.delete(RC_API, "RedisCluster", "sessions", rig.namespace)
        phases_seen: set[tuple[str, SyncPhase]] = set()

        def recreated_and_ready() -> bool:
            for name, state in rig.states().items():
                phases_seen.add((name, state.phase))
            return _recreated_and_ready(eu, rig.namespace, uid)

        eventually("eu-1's RedisCluster re-created and Ready", recreated_and_ready, 90, every=0.5)
        time.sleep(5)  # a few more passes over the repaired fleet
        states = rig.states()
        for name, state in states.items():
            assert (state.revision, state.phase) == (revision, SyncPhase.HEALTHY), (name, state)
            assert state.bad_revisions == (), (name, state.bad_revisions)
            assert state.last_good == revision
        assert not {p for _, p in phases_seen} & {SyncPhase.FAILED, SyncPhase.ROLLED_BACK}, phases_seen
        assert proc.running()
        no_traceback(proc)


@pytest.mark.slow
def test_a_failing_wave_resumed_after_a_restart_rolls_each_cluster_back_to_its_own_last_good(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    policy = write_policy(rig, "fast.yaml", {**FAST, "defaults": {**FAST["defaults"], "bake": "3s"}})
    with agents.shown_on_failure():
        old = commit_per_cluster(rig, "sessions cache", dict.fromkeys(LABELS, "7.2.4"))
        first = agents.start("first", rig.args(policy, "--no-leader-elect"))
        eventually(
            "every cluster healthy on the old revision", lambda: rig.all_healthy(old), 3 * ROLLOUT_TIMEOUT
        )

        new = commit_per_cluster(rig, "newer redis", dict.fromkeys(LABELS, "7.2.5"), hold=("us-1",))

        def us_waiting() -> bool:
            states = rig.states()
            return (
                states["eu-1"].phase is SyncPhase.HEALTHY
                and states["us-1"].revision == new
                and (states["us-1"].phase is SyncPhase.APPLIED)
            )

        eventually("us-1 applied and waiting for health", us_waiting, 3 * ROLLOUT_TIMEOUT)
        first.kill()
        at_restart = rig.states()
        assert at_restart["canary"].last_good == at_restart["eu-1"].last_good == new
        assert at_restart["us-1"].last_good == old

        agents.start("second", rig.args(policy, "--no-leader-elect"))

        def rolled_back() -> bool:
            state = rig.states()["us-1"]
            return state.phase in {SyncPhase.ROLLED_BACK, SyncPhase.FAILED} and state.revision != new

        eventually("us-1 rolled back", rolled_back, HEALTH_TIMEOUT + 3 * ROLLOUT_TIMEOUT)
        eventually(
            "us-1's rollback healthy",
            lambda: (
                rig.states()["us-1"].phase is SyncPhase.ROLLED_BACK
                and live_version(rig.clients["us-1"], rig.namespace) == "7.2.4"
            ),
            ROLLOUT_TIMEOUT,
        )
        states = rig.states()
        assert states["us-1"].revision == old
        assert new in states["us-1"].bad_revisions
        assert states["us-1"].last_good == old
        for name in ("canary", "eu-1"):
            assert (states[name].revision, states[name].phase) == (new, SyncPhase.HEALTHY), name
            assert live_version(rig.clients[name], rig.namespace) == "7.2.5"


def test_a_forbidden_cluster_is_reported_while_the_others_get_commits_and_repairs(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    policy = write_policy(
        rig, "fast.yaml", {**FAST, "waves": [FAST["waves"][0], {"name": "rest", "percent": 100}]}
    )
    admin = binding(own_identity(rig, "us-1"), "cluster-admin")
    us = rig.clients["us-1"]
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        args = rig.args(policy, "--no-leader-elect")
        args[args.index("--drift-interval") + 1] = "3s"
        proc = agents.start("agent", args)

        def others_healthy() -> bool:
            states = {n: s for n, s in rig.states().items() if n != "us-1"}
            return all((s.revision, s.phase) == (revision, SyncPhase.HEALTHY) for s in states.values())

        eventually("canary and eu-1 healthy while us-1 is forbidden", others_healthy, 3 * ROLLOUT_TIMEOUT)
        # The others are repaired too: eu-1's RedisCluster deleted out of band comes back.
        rig.clients["eu-1"].delete(RC_API, "RedisCluster", "sessions", rig.namespace)
        eventually(
            "eu-1 repaired",
            lambda: live_version(rig.clients["eu-1"], rig.namespace) == "7.2.4",
            60,
            every=0.5,
        )
        assert rig.states()["us-1"].phase is SyncPhase.NEVER
        assert live_version(us, rig.namespace) == ""
        samples = proc.metrics()
        assert samples.get('syncer_cluster_reachable{cluster="us-1"}') == 0
        assert samples.get('syncer_cluster_reachable{cluster="eu-1"}') == 1

        us.apply(admin)
        try:
            eventually("us-1 catches up once allowed", lambda: rig.all_healthy(revision), 3 * ROLLOUT_TIMEOUT)
        finally:
            remove(us, admin)
        assert proc.running()
        no_traceback(proc)


@pytest.mark.slow
def test_a_replica_whose_lease_cluster_goes_away_stays_up_serving_and_resumes(
    rig: Rig, agents: Agents, fleet: FleetHandle
) -> None:
    rig.start_controllers()
    home = "us-1"
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        proc = agents.start("agent", rig.args("two-waves.yaml", *lease_flags(rig, home)))
        eventually("every cluster healthy", lambda: rig.all_healthy(first), 3 * ROLLOUT_TIMEOUT)

        fleet.state.stop_component(home, APISERVER, _quiet)
        try:
            eventually("the replica to stand by", lambda: proc.get("/readyz")[1].startswith("standby"), 30)
            eventually("syncer_leader 0", lambda: proc.metrics()["syncer_leader"] == 0, 10)
            time.sleep(10)  # well past the lease; it keeps trying and keeps serving
            assert proc.running()
            assert proc.get("/healthz")[0] == 200
        finally:
            fleet.state.start_component(home, APISERVER, _quiet)
        # The cluster's controller manager, scheduler and kwok would watch the apiserver again only
        # after client-go's backoff (up to 30 s, all of it waiting on the fleet, not on the agent):
        # started again, they connect at once.
        for component in WORKLOAD_CHAIN:
            fleet.state.stop_component(home, component, _quiet)
            fleet.state.start_component(home, component, _quiet)
        eventually("the replica to lead again", lambda: proc.get("/readyz")[1].startswith("leader"), 60)
        working_again(rig.clients[home], rig.namespace)
        second = rig.commit("newer redis", "7.2.5")
        eventually(
            "every cluster on the newer revision", lambda: rig.all_healthy(second), 3 * ROLLOUT_TIMEOUT
        )
        assert proc.running()
        no_traceback(proc)


def _tokens(rig: Rig) -> dict[str, int]:
    found = {}
    for name, client in rig.clients.items():
        cm = client.get("v1", "ConfigMap", STATE_CONFIGMAP, rig.state_namespace)
        found[name] = int(((cm["metadata"].get("annotations") or {}).get(FENCING_TOKEN)) or 0)
    return found


@pytest.mark.slow
def test_a_leader_frozen_past_its_lease_writes_nothing_when_it_resumes(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    # The canary wave bakes long enough for a to be caught in it (a is caught within about 2 s of the
    # canary's apply); b's whole rollout bakes the canary wave as long and only starts once a's Lease
    # expired, so it outlasts the rest of a's bake at any length. The other waves have nothing to wait for.
    canary, *rest = FAST["waves"]
    slow = write_policy(
        rig,
        "slow.yaml",
        {
            **FAST,
            "waves": [{**canary, "bake": "10s"}, *rest],
            "defaults": {**FAST["defaults"], "healthTimeout": "60s"},
            "rollback": False,
        },
    )
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        a = agents.start("a", rig.args(slow, *lease_flags(rig, "canary")))
        eventually("a to lead", lambda: a.get("/readyz")[1].startswith("leader"), 30)
        b = agents.start("b", rig.args(slow, *lease_flags(rig, "canary")))
        eventually("b to stand by", lambda: b.get("/readyz")[1].startswith("standby"), 30)
        eventually("every cluster healthy", lambda: rig.all_healthy(first), 3 * ROLLOUT_TIMEOUT)

        second = rig.commit("newer redis", "7.2.5")
        # Frozen once the canary's apply finished (it records applied), not while its state says
        # applying: an apply already past its fence when the process froze still lands when it
        # resumes (see docs/agent.md, the failure modes), which is not what this test is about.
        eventually(
            "a baking the canary wave of the second revision",
            lambda: (
                (s := rig.states())["canary"].revision == second
                and s["canary"].phase is SyncPhase.APPLIED
                and s["eu-1"].revision == first
            ),
            ROLLOUT_TIMEOUT,
        )
        a.send(signal.SIGSTOP)
        passes = len(a.said("sync "))
        try:
            frozen_tokens = _tokens(rig)
            third = rig.commit("newest redis", "7.2.6")
            eventually("b to lead", lambda: b.get("/readyz")[1].startswith("leader"), 30)
            done = eventually(
                "every cluster on the third revision", lambda: rig.all_healthy(third), 3 * ROLLOUT_TIMEOUT
            )
        finally:
            a.send(signal.SIGCONT)
        b_tokens = _tokens(rig)
        assert all(b_tokens[n] > frozen_tokens[n] for n in b_tokens), (frozen_tokens, b_tokens)

        eventually("a to stand by", lambda: a.get("/readyz")[1].startswith("standby"), 30)
        # The pass a had in hand when it froze ends (fenced out): whatever it would write is behind it.
        eventually("a's frozen pass to end", lambda: len(a.said("sync ")) > passes, 30)
        after = rig.states()
        assert _tokens(rig) == b_tokens
        for name, state in after.items():
            assert (state.revision, state.phase) == (third, SyncPhase.HEALTHY), (name, state)
            assert state.applied_at == done[name].applied_at, name
            assert live_version(rig.clients[name], rig.namespace) == "7.2.6", name
        assert a.running()
        assert b.running()
        assert a.get("/healthz")[0] == 200
        no_traceback(a, b)


@pytest.mark.slow
def test_an_agent_started_while_git_is_down_repairs_drift_from_what_the_clusters_record(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        first = agents.start("first", rig.args("two-waves.yaml", "--no-leader-elect"))
        eventually("every cluster healthy", lambda: rig.all_healthy(revision), 3 * ROLLOUT_TIMEOUT)
        first.send(signal.SIGTERM)
        first.popen.wait(timeout=30)

        away = rig.remote.with_name("remote-away.git")
        rig.remote.rename(away)  # git is unreachable from here on, for the new agent too
        eu = rig.clients["eu-1"]
        uid = eu.get(RC_API, "RedisCluster", "sessions", rig.namespace)["metadata"]["uid"]
        eu.delete(RC_API, "RedisCluster", "sessions", rig.namespace)
        args = rig.args("two-waves.yaml", "--no-leader-elect")
        args[args.index("--drift-interval") + 1] = "3s"
        second = agents.start("second", args)

        eventually(
            "eu-1's RedisCluster re-created and Ready with git down",
            lambda: _recreated_and_ready(eu, rig.namespace, uid),
            90,
            every=0.5,
        )
        eventually(
            "eu-1 recorded healthy again",
            lambda: rig.states()["eu-1"].health == "healthy",
            30,
        )
        states = rig.states()
        for name, state in states.items():
            assert (state.revision, state.phase, state.last_good) == (
                revision,
                SyncPhase.HEALTHY,
                revision,
            ), (name, state)
            assert state.bad_revisions == ()
        samples = second.metrics()
        assert samples.get('syncer_git_poll_total{result="error"}', 0) >= 1, samples
        assert samples.get('syncer_cluster_healthy{cluster="eu-1"}') == 1

        away.rename(rig.remote)
        newer = rig.commit("newer redis", "7.2.5")
        eventually("every cluster on the newer revision", lambda: rig.all_healthy(newer), 3 * ROLLOUT_TIMEOUT)
        assert {live_version(c, rig.namespace) for c in rig.clients.values()} == {"7.2.5"}
        assert second.running()
        no_traceback(first, second)
