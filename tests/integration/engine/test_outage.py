"""A cluster's kube-apiserver lost in the middle of a wave, on the real 3-cluster fleet.

The fleet repository holds one Namespace labelled with the revision, so every cluster shows which
revision it runs. The canary wave holds canary, the second wave ("rest") holds eu-1 and us-1, applied
together; rollback is on. Revision rev-1 is rolled out everywhere first; then rev-2 is synced with a
listener that stops eu-1's kube-apiserver from inside the rollout, at a point the rollout itself
reports, so the outage always falls at the same step of the wave:

- ``applying``: eu-1's apply of rev-2 has just started (before anything of rev-2 reached eu-1): its
  state write and its apply fail, and the wave fails on the apply error;
- ``applied``: eu-1 has taken rev-2 and recorded it, and the gate has not yet looked at its health:
  the health checks fail, and the wave fails when the wave's health timeout runs out.

Either way the canary (another wave, already done) is left exactly as it was, us-1 is rolled back to
rev-1, eu-1 is reported (as failed and as a cluster whose state could not be written), and no
cluster's sync state is corrupt. A sync while eu-1 is still down goes on for the others and waits
for it. Once eu-1's apiserver is started again, a newer revision rolls out to all three clusters.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from syncer.apply import ApplyPolicy, RetryPolicy
from syncer.config.rollout import WaveGate
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent
from syncer.domain.sync_state import SyncPhase
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.kube import ClientOptions, ClusterClient
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from syncer.status.state_store import STATE_CONFIGMAP
from tests.integration.conftest import FleetHandle
from tests.support.fleet_repo import FleetRepo, canary_then_rest
from tests.support.namespaces import delete_namespaces
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration

STOPPED = "eu-1"
APISERVER = "kube-apiserver"
REVISION_LABEL = "outage.syncer.dev/revision"
HEALTH_TIMEOUT = 4.0
# Small on purpose: a refused connection fails at once, and the test must not wait on long timeouts.
CLIENT_OPTIONS = ClientOptions(timeout=3.0)
RETRIES = RetryPolicy(attempts=2, base_delay=0.2, max_delay=0.5)


def _quiet(_: str) -> None:
    pass


class Repo(FleetRepo):
    """The fleet repository of these tests: one Namespace that carries the revision as a label."""

    def write(self, revision: str) -> DesiredFleet:
        return self.write_documents(revision, [self.namespace({REVISION_LABEL: revision})])


@pytest.fixture
def clients(fleet: FleetHandle) -> Iterator[dict[str, ClusterClient]]:
    made = {
        n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n, options=CLIENT_OPTIONS)
        for n in fleet.names
    }
    yield made
    for client in made.values():
        client.close()


@pytest.fixture
def prefix(namespace: str, clients: dict[str, ClusterClient]) -> Iterator[str]:
    name = f"{namespace}-o"
    yield name
    delete_namespaces(clients.values(), name, f"{name}-state")


def sync_options(prefix: str) -> RolloutOptions:
    return RolloutOptions(
        rollout=canary_then_rest(WaveGate(max_concurrent=2, health_timeout=HEALTH_TIMEOUT, bake=0)),
        apply=ApplyPolicy(retry=RETRIES),
        state_namespace=f"{prefix}-state",
        health_poll=0.5,
    )


def rollout(
    clients: dict[str, ClusterClient], prefix: str, listener: Callable[[PassEvent], None] | None = None
) -> FleetRollout:
    return FleetRollout(clients, sync_options(prefix), listener=listener, hooks=UNFENCED_HOOKS)


def running_revision(client: ClusterClient, prefix: str) -> str:
    labels = client.get("v1", "Namespace", prefix)["metadata"].get("labels") or {}
    return str(labels.get(REVISION_LABEL, ""))


def versions(client: ClusterClient, prefix: str) -> tuple[str, str]:
    """The resourceVersions of the cluster's Namespace and sync-state ConfigMap: any write changes them."""
    namespace = client.get("v1", "Namespace", prefix)
    state = client.get("v1", "ConfigMap", STATE_CONFIGMAP, f"{prefix}-state")
    return namespace["metadata"]["resourceVersion"], state["metadata"]["resourceVersion"]


# What fails eu-1's wave, depending on when its apiserver goes away.
FAILURE = {
    "applying": f"{STOPPED}: apply failed: reading live state failed",
    "applied": f"{STOPPED}: not healthy {HEALTH_TIMEOUT:g}s after apply (progressing: health check failed",
}


@pytest.mark.parametrize("moment", ["applying", "applied"])
def test_an_apiserver_lost_mid_wave_fails_that_wave_only_and_a_newer_revision_proceeds(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path, moment: str
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    rev1 = repo.write("rev-1")
    first = rollout(clients, prefix).sync(rev1)
    assert first.outcome is RolloutOutcome.APPLIED, first
    rev2 = repo.write("rev-2")

    stopped = threading.Event()
    canary_at_stop: list[tuple[str, str]] = []
    log: list[PassEvent] = []

    def stop_eu1_at_the_moment(progress: PassEvent) -> None:
        """Takes eu-1's apiserver down when the rollout reports the chosen step of eu-1's wave."""
        log.append(progress)
        if stopped.is_set() or (progress.wave, progress.cluster, progress.step) != ("rest", STOPPED, moment):
            return
        canary_at_stop.append(versions(clients["canary"], prefix))
        fleet.state.stop_component(STOPPED, APISERVER, _quiet)
        stopped.set()

    try:
        report = rollout(clients, prefix, stop_eu1_at_the_moment).sync(rev2, last_good=rev1)
        assert stopped.is_set(), "the rollout never reached the step where eu-1 goes down"

        # eu-1's wave failed on eu-1 alone and was rolled back; the canary wave had proceeded.
        assert report.outcome is RolloutOutcome.ROLLED_BACK, report
        assert [(w.name, sorted(w.clusters), w.decision) for w in report.waves] == [
            ("canary", ["canary"], Decision.PROCEED),
            ("rest", ["eu-1", "us-1"], Decision.ROLLBACK),
        ]
        reason = report.waves[-1].reason
        assert reason.startswith(FAILURE[moment]), reason
        assert "cannot reach the apiserver" in reason
        assert "us-1" not in reason
        # The rollback reached us-1; eu-1 could not be rolled back, and the report says so.
        rollback = f" rolled back to rev-1: {STOPPED}: apply failed: reading live state failed"
        assert rollback in report.message, report.message
        unsaved = dict(report.unsaved)
        assert list(unsaved) == [STOPPED]
        assert "cannot reach the apiserver" in unsaved[STOPPED]
        assert {p.cluster for p in log if p.step == "state-unsaved"} == {STOPPED}

        # us-1 is back on rev-1 with its wave; it applied rev-2 cleanly, so rev-2 is not bad there (it
        # failed on eu-1 alone). The canary was not written to at all.
        us1 = StateStore(clients["us-1"], f"{prefix}-state").load().state
        assert (us1.revision, us1.phase) == ("rev-1", SyncPhase.ROLLED_BACK)
        assert us1.failures == ()
        assert running_revision(clients["us-1"], prefix) == "rev-1"
        assert versions(clients["canary"], prefix) == canary_at_stop[0]
        canary = StateStore(clients["canary"], f"{prefix}-state").load().state
        assert (canary.revision, canary.phase) == ("rev-2", SyncPhase.HEALTHY)
        assert running_revision(clients["canary"], prefix) == "rev-2"

        # While eu-1 is down, a sync goes on without it: the canary takes rev-2b, so does us-1 (eu-1's
        # wave), and that wave waits for eu-1 with the reason; eu-1 itself is not touched.
        early = rollout(clients, prefix).sync(repo.write("rev-2b"), last_good=rev1)
        assert early.outcome is RolloutOutcome.WAITING, early
        assert early.message.startswith("waiting for eu-1: cannot read its sync state: [eu-1]"), early.message
        assert [(w.name, w.decision) for w in early.waves] == [
            ("canary", Decision.PROCEED),
            ("rest", Decision.WAIT),
        ]
        assert running_revision(clients["canary"], prefix) == "rev-2b"
        assert running_revision(clients["us-1"], prefix) == "rev-2b"
    finally:
        fleet.state.start_component(STOPPED, APISERVER, _quiet)

    # No sync state is corrupt, and what each cluster stores agrees with what it runs. eu-1 stores its
    # last state written before the outage: rev-1 when rev-2 never reached it, rev-2 when it had
    # taken it (a revision the gate never cleared, so still only applied).
    stored = {}
    for name, client in clients.items():
        loaded = StateStore(client, f"{prefix}-state").load()
        assert loaded.problem == "", f"{name}: {loaded.problem}"
        stored[name] = loaded.state
        assert running_revision(client, prefix) == loaded.state.revision, name
    expected = {"applying": ("rev-1", SyncPhase.HEALTHY), "applied": ("rev-2", SyncPhase.APPLIED)}[moment]
    assert (stored[STOPPED].revision, stored[STOPPED].phase) == expected

    # A newer revision goes everywhere, eu-1 included.
    log.clear()
    rev3 = repo.write("rev-3")
    final = rollout(clients, prefix, log.append).sync(rev3, last_good=rev1)
    assert final.outcome is RolloutOutcome.APPLIED, final
    assert [w.decision for w in final.waves] == [Decision.PROCEED, Decision.PROCEED]
    assert final.unsaved == ()
    assert {p.cluster for p in log if p.step == "applied"} == {"canary", "eu-1", "us-1"}
    for name, client in clients.items():
        state = StateStore(client, f"{prefix}-state").load().state
        assert (state.revision, state.phase, state.last_good) == ("rev-3", SyncPhase.HEALTHY, "rev-3"), name
        assert running_revision(client, prefix) == "rev-3", name
