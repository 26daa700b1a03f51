"""Failed-before on the real 3-cluster fleet, judged per cluster and per cause.

A Namespace another field manager made first, with a label git sets otherwise, is a conflict: a
failure the live state causes, tried again once that object is gone. A cluster of a failed wave that
applied cleanly, and a cluster whose RedisCluster was already degraded before the revision came, do
not remember the revision as bad; a corrupt state ConfigMap is rebuilt without forgetting the
failures. No RedisCluster controller runs: the tests write the RedisClusters' status themselves.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate
from syncer.domain.changeset import FailureCause
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, SyncPhase
from syncer.engine.diff import DiffOptions
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import NotFound
from syncer.kube import ApplyOptions, ClusterClient
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from syncer.status.state_store import STATE_CONFIGMAP, STATE_KEY
from tests.integration.conftest import FleetHandle
from tests.support.agent_config import acts_config
from tests.support.fleet_repo import FleetRepo, canary_then_rest
from tests.support.namespaces import delete_namespaces
from tests.support.unfenced import UNFENCED_HOOKS
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

RC = "redis.syncer.dev/v1alpha1"
BY_HAND = "by-hand"


@pytest.fixture
def clients(fleet: FleetHandle, crd_installed: None) -> Iterator[dict[str, ClusterClient]]:
    made = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in fleet.names}
    yield made
    for client in made.values():
        client.close()


@pytest.fixture
def prefix(namespace: str, clients: dict[str, ClusterClient]) -> Iterator[str]:
    name = f"{namespace}-f"
    yield name
    delete_namespaces(clients.values(), name, extra(name), f"{name}-state")


def extra(prefix: str) -> str:
    return f"{prefix}-x"


class Repo(FleetRepo):
    """The prefix's Namespace, and on demand a second Namespace labelled ``team: git`` and a RedisCluster."""

    def write(self, revision: str, *, second: bool = False, redis: bool = False) -> DesiredFleet:
        documents = [self.namespace({"rev": revision})]
        if second:
            documents.append(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": extra(self.prefix), "labels": {"team": "git"}},
                }
            )
        if redis:
            documents.append(self.redis_cluster())
        return self.write_documents(revision, documents)


def rollout(
    clients: dict[str, ClusterClient], prefix: str, timeout: float = 60.0, log: list[PassEvent] | None = None
) -> FleetRollout:
    policy: RolloutPolicy = canary_then_rest(WaveGate(max_concurrent=2, health_timeout=timeout, bake=0))
    options = RolloutOptions(
        rollout=policy, diff=DiffOptions(), state_namespace=f"{prefix}-state", health_poll=0.5
    )
    return FleetRollout(clients, options, listener=None if log is None else log.append, hooks=UNFENCED_HOOKS)


def state(client: ClusterClient, prefix: str) -> ClusterSyncState:
    return StateStore(client, f"{prefix}-state").load().state


def made_by_hand(client: ClusterClient, prefix: str) -> None:
    """Another field manager makes the second Namespace first, labelled otherwise than git says."""
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": extra(prefix), "labels": {"team": "ops"}},
    }
    client.apply(body, ApplyOptions(field_manager=BY_HAND))


def gone(client: ClusterClient, prefix: str) -> bool:
    """Whether the second Namespace is gone, or on its way (deleted, terminating)."""
    try:
        live = client.get("v1", "Namespace", extra(prefix))
    except NotFound:
        return True
    return bool(live["metadata"].get("deletionTimestamp"))


def removed_by_hand(client: ClusterClient, prefix: str) -> None:
    client.delete("v1", "Namespace", extra(prefix))

    def absent() -> bool:
        try:
            client.get("v1", "Namespace", extra(prefix))
        except NotFound:
            return True
        return False

    eventually(f"namespace {extra(prefix)} gone", absent, 60)


def team(client: ClusterClient, prefix: str) -> tuple[str, tuple[str, ...]]:
    """The second Namespace's team label and the managers of its fields."""
    live = client.get("v1", "Namespace", extra(prefix))
    managers = tuple(sorted({m["manager"] for m in live["metadata"].get("managedFields", [])}))
    return live["metadata"]["labels"]["team"], managers


def test_a_conflict_is_a_live_failure_refused_while_it_stands_and_retried_once_the_object_is_gone(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    first = repo.write("rev-1")
    assert rollout(clients, prefix).sync(first).outcome is RolloutOutcome.APPLIED
    made_by_hand(clients["canary"], prefix)
    second = repo.write("rev-2", second=True)

    failed = rollout(clients, prefix).sync(second, last_good=first)
    assert failed.outcome is RolloutOutcome.ROLLED_BACK, failed
    canary = state(clients["canary"], prefix)
    assert (canary.revision, canary.phase) == ("rev-1", SyncPhase.ROLLED_BACK)
    [failure] = canary.failures
    assert (failure.revision, failure.cause) == ("rev-2", FailureCause.LIVE)
    assert failure.objects == (InventoryEntry("v1", "Namespace", "", extra(prefix)),)
    assert failure.fingerprint

    # While the other manager's object stands as it was, the revision is refused and nothing written.
    refused = rollout(clients, prefix).sync(second, last_good=first)
    assert refused.outcome is RolloutOutcome.HALTED, refused
    assert refused.message.startswith("canary: refused: failed before (live): apply failed:")
    assert team(clients["canary"], prefix) == ("ops", (BY_HAND,))

    removed_by_hand(clients["canary"], prefix)
    retried = rollout(clients, prefix).sync(second, last_good=first)
    assert retried.outcome is RolloutOutcome.APPLIED, retried
    for name, client in clients.items():
        now = state(client, prefix)
        assert (now.revision, now.phase, now.last_good) == ("rev-2", SyncPhase.HEALTHY, "rev-2"), name
        assert team(client, prefix)[0] == "git", name


def test_a_revision_whose_live_failure_was_resolved_is_a_rollback_target_once_it_ran_healthy(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    """rev-2 failed on the canary because another manager's object stood in the way; once that was
    removed, rev-2 ran healthy there. When rev-3 then fails, the canary goes back to rev-2: the
    failure it remembers of rev-2 is judged by its cause, as the refusal judges it, not by its mere
    presence."""
    repo = Repo(tmp_path / "repo", prefix)
    first = repo.write("rev-1")
    assert rollout(clients, prefix).sync(first).outcome is RolloutOutcome.APPLIED
    made_by_hand(clients["canary"], prefix)
    second = repo.write("rev-2", second=True)
    assert rollout(clients, prefix).sync(second, last_good=first).outcome is RolloutOutcome.ROLLED_BACK
    removed_by_hand(clients["canary"], prefix)
    assert rollout(clients, prefix).sync(second, last_good=first).outcome is RolloutOutcome.APPLIED
    canary = state(clients["canary"], prefix)
    assert (canary.last_good, canary.bad_revisions) == ("rev-2", ("rev-2",)), "the failure is remembered"

    third = repo.write("rev-3", second=True, redis=True)  # no controller: never Ready
    report = rollout(clients, prefix, timeout=2).sync(third, last_good=second)
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert "canary rolled back to rev-2" in report.message, report.message
    canary = state(clients["canary"], prefix)
    assert (canary.revision, canary.phase) == ("rev-2", SyncPhase.ROLLED_BACK)
    # What `syncer status` shows as its last error: the failure it was rolled back from.
    assert canary.last_error.startswith("rev-3 failed: "), canary.last_error
    assert canary.last_error.endswith("; rolled back to rev-2"), canary.last_error
    assert (
        team(clients["canary"], prefix) == ("git", ("syncer",)) or team(clients["canary"], prefix)[0] == "git"
    )


def test_only_the_cluster_where_the_revision_failed_remembers_it_not_the_clean_one_of_its_wave(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    first = repo.write("rev-1")
    assert rollout(clients, prefix).sync(first).outcome is RolloutOutcome.APPLIED
    made_by_hand(clients["us-1"], prefix)
    second = repo.write("rev-2", second=True)

    report = rollout(clients, prefix).sync(second, last_good=first)
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [w.name for w in report.waves] == ["canary", "rest"]
    states = {name: state(client, prefix) for name, client in clients.items()}
    assert (states["canary"].revision, states["canary"].phase) == ("rev-2", SyncPhase.HEALTHY)
    # eu-1 applied rev-2 cleanly and was healthy: rolled back with its wave, but rev-2 is not bad there.
    assert (states["eu-1"].revision, states["eu-1"].failures) == ("rev-1", ())
    assert "rev-2" not in states["eu-1"].bad_revisions
    assert gone(clients["eu-1"], prefix), "the rollback prunes what rev-2 made on eu-1"
    assert [(f.revision, f.cause) for f in states["us-1"].failures] == [("rev-2", FailureCause.LIVE)]
    assert team(clients["us-1"], prefix) == ("ops", (BY_HAND,))


def set_health(client: ClusterClient, prefix: str, *, degraded: bool) -> None:
    """Write the RedisCluster's status as its controller would: Ready, or Stalled (degraded)."""
    live = client.get(RC, "RedisCluster", "sessions", prefix)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready, stalled = ("False", "True") if degraded else ("True", "False")
    reason = "NodesDown" if degraded else "Ready"
    conditions = [
        {"type": "Ready", "status": ready, "lastTransitionTime": at, "reason": reason, "message": reason},
        {"type": "Stalled", "status": stalled, "lastTransitionTime": at, "reason": reason, "message": reason},
    ]
    status = {"observedGeneration": live["metadata"]["generation"], "conditions": conditions}
    body = {"apiVersion": RC, "kind": "RedisCluster", "metadata": {"name": "sessions", "namespace": prefix}}
    client.apply_status({**body, "status": status}, ApplyOptions(field_manager="test-controller", force=True))


def made_ready(clients: dict[str, ClusterClient], prefix: str) -> threading.Thread:
    """A stand-in controller: marks each cluster's RedisCluster Ready once syncer made it."""

    def run() -> None:
        for client in clients.values():
            eventually("the RedisCluster", lambda c=client: _exists(c, prefix), 60)
            set_health(client, prefix, degraded=False)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _exists(client: ClusterClient, prefix: str) -> bool:
    try:
        client.get(RC, "RedisCluster", "sessions", prefix)
    except NotFound:
        return False
    return True


def test_a_cluster_degraded_before_the_revision_came_does_not_blame_it(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    first = repo.write("rev-1", redis=True)
    marker = made_ready(clients, prefix)
    assert rollout(clients, prefix).sync(first).outcome is RolloutOutcome.APPLIED
    marker.join(timeout=5)
    set_health(clients["canary"], prefix, degraded=True)  # degraded on rev-1, before rev-2 exists

    second = repo.write("rev-2", redis=True)
    log: list[PassEvent] = []
    report = rollout(clients, prefix, timeout=5, log=log).sync(second, last_good=first)
    assert report.outcome is RolloutOutcome.HALTED, report
    assert [(e.cluster, e.revision) for e in log if e.step is Step.NOT_BLAMED] == [("canary", "rev-2")]
    assert "canary: degraded" in report.message
    assert "canary: not blamed: it was not healthy before rev-2 was applied (degraded" in report.message
    canary = state(clients["canary"], prefix)
    assert (canary.revision, canary.failures) == ("rev-2", ())
    assert canary.degraded_before.startswith("degraded:")
    # Not rolled back either: it ran rev-1 degraded too.
    assert clients["canary"].get("v1", "Namespace", prefix)["metadata"]["labels"]["rev"] == "rev-2"


def test_a_rebuilt_state_keeps_the_failures(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    first = repo.write("rev-1")
    assert rollout(clients, prefix).sync(first).outcome is RolloutOutcome.APPLIED
    made_by_hand(clients["canary"], prefix)
    second = repo.write("rev-2", second=True)
    assert rollout(clients, prefix).sync(second, last_good=first).outcome is RolloutOutcome.ROLLED_BACK

    corrupt = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": STATE_CONFIGMAP, "namespace": f"{prefix}-state"},
        "data": {STATE_KEY: "{not json"},
    }
    clients["canary"].apply(corrupt, ApplyOptions(field_manager="vandal", force=True))
    loaded = StateStore(clients["canary"], f"{prefix}-state").load()
    assert "unreadable" in loaded.problem
    assert loaded.state.rebuilt
    assert [(f.revision, f.cause) for f in loaded.state.failures] == [("rev-2", FailureCause.LIVE)]

    again = rollout(clients, prefix).sync(second, last_good=first)
    assert again.outcome is RolloutOutcome.HALTED, again
    assert again.message.startswith("canary: refused: failed before (live)")
    assert team(clients["canary"], prefix) == ("ops", (BY_HAND,))


def agent_config(root: Path, fleet: FleetHandle) -> Path:
    """An agent config naming the fleet's clusters (its source is not contacted by ``syncer retry``)."""
    return acts_config(root, fleet.kubeconfig, fleet.names)


def test_a_persons_retry_tries_a_content_failure_again_once_and_is_kept_beside_the_state(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    """The retry names the failed revision by 7 characters of it, as every person's act may."""
    repo = Repo(tmp_path / "repo", prefix)
    first = repo.write("rev-1")
    assert rollout(clients, prefix).sync(first).outcome is RolloutOutcome.APPLIED
    bad_id = "badc0de" + "5" * 33
    bad = repo.write(bad_id, redis=True)  # no controller: the RedisCluster never becomes Ready
    assert (
        rollout(clients, prefix, timeout=2).sync(bad, last_good=first).outcome is RolloutOutcome.ROLLED_BACK
    )
    refused = rollout(clients, prefix, timeout=2).sync(bad, last_good=first)
    assert refused.message.startswith("canary: refused: failed before (content): not healthy 2s after apply")

    base = [sys.executable, "-m", "syncer", "retry", "--config", str(agent_config(tmp_path, fleet))]
    base += ["--cluster", "canary", "--reason", "the webhook is fixed"]
    base += ["--by", "on-call", "--state-namespace", f"{prefix}-state"]
    for wrong in ("deadbee", "badc0"):  # names no failure there; too short to name one
        refused_retry = subprocess.run(
            [*base, "--revision", wrong], capture_output=True, text=True, timeout=60, check=False
        )
        assert refused_retry.returncode == 2, refused_retry
        assert f"canary records failures or aborts of {bad_id[:12]}" in refused_retry.stderr
        assert state(clients["canary"], prefix).retry.at == 0.0, "a refused retry records nothing"
    done = subprocess.run(
        [*base, "--revision", bad_id[:7]], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"canary: revision {bad_id[:12]} is tried again at the next pass (asked by on-call)"
    )

    tried = rollout(clients, prefix, timeout=2).sync(bad, last_good=first)
    assert tried.outcome is RolloutOutcome.ROLLED_BACK, tried  # applied again, failed again
    canary = state(clients["canary"], prefix)
    assert (canary.retry.revision, canary.retry.by, canary.retry.reason) == (
        bad_id,
        "on-call",
        "the webhook is fixed",
    )
    [failure] = canary.failures
    assert failure.at > canary.retry.at, "the new failure is recorded anew, after the retry"
    # Kept under its own field manager beside the state, through the agent's writes since.
    stored = clients["canary"].get("v1", "ConfigMap", STATE_CONFIGMAP, f"{prefix}-state")
    assert "syncer-retry" in {m["manager"] for m in stored["metadata"]["managedFields"]}
    again = rollout(clients, prefix, timeout=2).sync(bad, last_good=first)
    assert again.outcome is RolloutOutcome.HALTED, again
