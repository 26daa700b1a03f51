"""Real ``syncer run`` processes on the real fleet, drilled through two faults of a rollout in
flight, each judged by what the clusters record and what runs in them:

- a newer verified revision committed while the canary wave bakes an older one takes over at the
  next wave boundary: no later wave ever records or runs the older one;
- a cluster whose sync state the agent may not write (RBAC) while a revision fails there is rolled
  back once, not applied and rolled back again on every poll; once it may write again, what was
  decided is what it records.
"""

from __future__ import annotations

import time

import pytest

from syncer.domain.sync_state import SyncPhase
from syncer.errors import Forbidden
from syncer.kube import ApplyOptions, ClusterClient
from syncer.status.state_store import STATE_CONFIGMAP
from tests.integration.agent.drills import (
    FAST,
    HEALTH_TIMEOUT,
    all_but_configmap_writes,
    binding,
    commit_per_cluster,
    event_notes,
    lease_flags,
    live_generation,
    live_ready,
    live_version,
    no_traceback,
    own_identity,
    remove,
    write_policy,
)
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import CLUSTERS, LABELS, ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

CANARY_BAKE = 10  # seconds: time enough to commit a newer revision while the canary wave bakes
HALTED = 'syncer_sync_total{result="halted"}'
OBSERVED_POLLS = 5  # polls (of 2 s) watched while the canary's state cannot be written


class Seen:
    """What each cluster recorded (revision, last good) and ran (live version), at every look."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.recorded: dict[str, set[str]] = {n: set() for n in CLUSTERS}
        self.ran: dict[str, set[str]] = {n: set() for n in CLUSTERS}

    def look(self) -> bool:
        for name, state in self.rig.states().items():
            self.recorded[name] |= {r for r in (state.revision, state.last_good) if r}
        for name, client in self.rig.clients.items():
            self.ran[name] |= {v for v in (live_version(client, self.rig.namespace),) if v}
        return True


@pytest.mark.slow
def test_a_superseded_revision_never_reaches_later_waves(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    policy = write_policy(
        rig,
        "supersede.yaml",
        {
            **FAST,
            "waves": [{**FAST["waves"][0], "bake": f"{CANARY_BAKE}s"}, *FAST["waves"][1:]],
            "defaults": {**FAST["defaults"], "healthTimeout": f"{ROLLOUT_TIMEOUT}s"},
        },
    )
    seen = Seen(rig)
    with agents.shown_on_failure():
        older = rig.commit("sessions cache", "7.2.4")
        proc = agents.start("agent", rig.args(policy, *lease_flags(rig, "canary")))
        eventually(
            "the canary wave to apply the older revision",
            lambda: seen.look() and older in seen.recorded["canary"],
            ROLLOUT_TIMEOUT,
        )
        newer = rig.commit("newer redis", "7.2.5")
        seen.look()
        assert not seen.recorded["eu-1"] | seen.recorded["us-1"], "the older revision went past the canary"

        done = eventually(
            "every cluster healthy on the newer revision",
            lambda: rig.all_healthy(newer) if seen.look() else None,
            3 * ROLLOUT_TIMEOUT,
        )
        assert (seen.recorded["canary"], seen.ran["canary"]) == ({older, newer}, {"7.2.4", "7.2.5"})
        for name in ("eu-1", "us-1"):
            assert (seen.recorded[name], seen.ran[name]) == ({newer}, {"7.2.5"}), name
            # Created at the newer revision and never changed since: nothing older was ever applied.
            assert live_generation(rig.clients[name], rig.namespace) == 1, name
        for name, state in done.items():
            assert (state.last_good, state.bad_revisions) == (newer, ()), (name, state)
            assert live_version(rig.clients[name], rig.namespace) == "7.2.5", name
        # Written to the clusters the agent had connected to by then: the canary's, at least.
        superseded = event_notes(rig, "RevisionSuperseded")
        assert any(older in note for note in superseded["canary"]), superseded
        assert proc.running()
        no_traceback(proc)


def state_writes_refused(client: ClusterClient, namespace: str) -> bool:
    """True when ``client``'s identity may not write the sync state (asked with a dry run)."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": STATE_CONFIGMAP, "namespace": namespace},
    }
    try:
        client.apply(body, ApplyOptions(field_manager="rbac-probe", dry_run=True))
    except Forbidden:
        return True
    return False


@pytest.mark.slow
def test_a_cluster_whose_state_cannot_be_written_is_not_applied_and_rolled_back_every_poll(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    canary, namespace = rig.clients["canary"], rig.namespace
    user = own_identity(rig, "canary")
    role = all_but_configmap_writes(canary, f"{user}-all-but-configmap-writes")
    admin, narrowed = binding(user, "cluster-admin"), binding(user, role["metadata"]["name"])
    as_agent = ClusterClient.from_kubeconfig(str(rig.root / "canary.kubeconfig"), "canary")
    canary.apply(admin)
    policy = write_policy(rig, "fast.yaml", FAST)
    try:
        with agents.shown_on_failure():
            old = commit_per_cluster(rig, "sessions cache", dict.fromkeys(LABELS, "7.2.4"))
            proc = agents.start("agent", rig.args(policy, "--no-leader-elect"))
            eventually("every cluster healthy", lambda: rig.all_healthy(old), 3 * ROLLOUT_TIMEOUT)
            stored = canary.get("v1", "ConfigMap", STATE_CONFIGMAP, rig.state_namespace)["metadata"]
            canary.apply(role)
            canary.apply(narrowed)
            remove(canary, admin)
            eventually(
                "the agent barred from writing canary's sync state",
                lambda: state_writes_refused(as_agent, rig.state_namespace),
                30,
            )

            new = commit_per_cluster(rig, "newer redis", dict.fromkeys(LABELS, "7.2.5"), hold=("canary",))
            eventually(
                "canary to get the new revision",
                lambda: live_version(canary, namespace) == "7.2.5",
                ROLLOUT_TIMEOUT,
            )
            eventually(
                "canary rolled back and Ready",
                lambda: live_version(canary, namespace) == "7.2.4" and live_ready(canary, namespace),
                HEALTH_TIMEOUT + ROLLOUT_TIMEOUT,
            )
            generation = live_generation(canary, namespace)
            assert generation == 3, "created, the new revision applied, rolled back"

            # Poll after poll: the failed revision is not applied (and rolled back) again.
            seen: set[tuple[int, str]] = set()
            deadline = time.monotonic() + OBSERVED_POLLS * 2 + 2
            while time.monotonic() < deadline:
                seen.add((live_generation(canary, namespace), live_version(canary, namespace)))
                time.sleep(0.2)
            assert seen == {(generation, "7.2.4")}, seen
            assert proc.metrics().get(HALTED, 0) >= OBSERVED_POLLS - 2, "the agent went on polling"
            # The fault was real: the sync state stayed as it was before the identity was narrowed.
            now = canary.get("v1", "ConfigMap", STATE_CONFIGMAP, rig.state_namespace)["metadata"]
            assert now["resourceVersion"] == stored["resourceVersion"]
            assert (rig.states()["canary"].revision, rig.states()["canary"].phase) == (old, SyncPhase.HEALTHY)

            canary.apply(admin)

            def decided_and_written() -> bool:
                state = rig.states()["canary"]
                return (state.revision, state.phase, state.last_good) == (
                    old,
                    SyncPhase.ROLLED_BACK,
                    old,
                ) and (new in state.bad_revisions)

            eventually("canary to record the rollback once it may write", decided_and_written, 30)
            time.sleep(4)  # two more polls: writing the state is all that happens
            assert live_generation(canary, namespace) == generation
            states = rig.states()
            for name in ("eu-1", "us-1"):
                assert (states[name].revision, states[name].phase) == (old, SyncPhase.HEALTHY), name
                assert live_generation(rig.clients[name], namespace) == 1, name
            assert proc.running()
            no_traceback(proc)
    finally:
        remove(canary, admin, narrowed, role)
        as_agent.close()
