"""A person's pin (``syncer rollback``) written while a pass runs, on the real 3-cluster fleet: the
pass read the states once at its start, and the pin lands between that read and the cluster's apply.
The pass's state write is tied to what it read (the ConfigMap's resourceVersion): the apiserver's 409
says someone wrote since, the pass learns the pin from the cluster read again and holds it. Nothing
is written there: no ``applying`` state, no history entry for a revision that never touched the
cluster, no object."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import Pin
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PersonActs
from syncer.status.history import history_of
from syncer.status.state_store import STATE_CONFIGMAP
from tests.integration.conftest import FleetHandle
from tests.support.fleet_repo import FleetRepo
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration

PINNED = "eu-1"


def _version(client: ClusterClient, api_version: str, kind: str, name: str, namespace: str = "") -> str:
    return str(client.get(api_version, kind, name, namespace)["metadata"]["resourceVersion"])


def test_a_pin_written_between_the_passs_read_and_its_apply_leaves_the_cluster_untouched(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    state_namespace = f"{prefix}-state"
    # One wave of every cluster, no bake: the race is at the apply, not in the gate's waits.
    policy = RolloutPolicy((WavePolicy("all", 100.0, gate=WaveGate(health_timeout=60, bake=0)),))
    options = RolloutOptions(rollout=policy, state_namespace=state_namespace, health_poll=0.5)
    first = repo.write_documents("r1", [repo.namespace({"rev": "r1"})])
    assert FleetRollout(clients, options, hooks=UNFENCED_HOOKS).sync(first).outcome is RolloutOutcome.APPLIED
    second: DesiredFleet = repo.write_documents("r2", [repo.namespace({"rev": "r2"})])

    person = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), PINNED)
    after_pin: dict[str, str] = {}
    log: list[PassEvent] = []

    def listener(event: PassEvent) -> None:
        log.append(event)
        if event.step is Step.APPLYING and event.cluster == PINNED and not after_pin:
            # The person's `syncer rollback`, after the pass read the states and before it writes.
            PersonActs(person, state_namespace).record_pin(Pin("r1", "ops", "bad release", time.time()))
            after_pin["state"] = _version(person, "v1", "ConfigMap", STATE_CONFIGMAP, state_namespace)
            after_pin["namespace"] = _version(person, "v1", "Namespace", prefix)

    try:
        report = FleetRollout(clients, options, listener=listener, hooks=UNFENCED_HOOKS).sync(second)
        assert after_pin, "the pass never reached the pinned cluster's apply"
        state_now = _version(person, "v1", "ConfigMap", STATE_CONFIGMAP, state_namespace)
        namespace_now = person.get("v1", "Namespace", prefix)
        configmap = person.get("v1", "ConfigMap", STATE_CONFIGMAP, state_namespace)
    finally:
        person.close()

    assert state_now == after_pin["state"], "the pass wrote the pinned cluster's state"
    assert [e.revision for e in history_of(configmap, PINNED)] == ["r1"], "a history entry for r2"
    assert namespace_now["metadata"]["resourceVersion"] == after_pin["namespace"], "an object written"
    assert namespace_now["metadata"]["labels"]["rev"] == "r1"
    assert [e.cluster for e in log if e.step is Step.CLUSTER_PINNED] == [PINNED]
    assert not [e for e in log if e.step in {Step.APPLIED, Step.APPLY_FAILED} and e.cluster == PINNED]
    assert report.outcome is RolloutOutcome.WAITING, report
    others = {n: c.get("v1", "Namespace", prefix)["metadata"]["labels"]["rev"] for n, c in clients.items()}
    assert others == {**dict.fromkeys(clients, "r2"), PINNED: "r1"}
