"""A person's suspension in the pass, through in-memory clusters: the one decision whether a cluster
may be changed now holds back a wave that would change a suspended cluster (with the reason), drift
repair and the watch of a passed wave, and lets everything go on once it is resumed. The suspension
is written into the in-memory ConfigMap beside the state, as server-side apply would merge it."""

from __future__ import annotations

import json
from dataclasses import asdict

from syncer.domain.progress import Step, Waiting
from syncer.domain.sync_state import Suspension, SyncPhase
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import SUSPENSION_KEY
from syncer.status.state_store import STATE_CONFIGMAP
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet


def suspend(rig: Rig, cluster: str, reason: str = "incident 42") -> None:
    key = ("v1", "ConfigMap", STATE_NAMESPACE, STATE_CONFIGMAP)
    configmap = rig.clusters[cluster].objects.setdefault(
        key,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": STATE_CONFIGMAP, "namespace": STATE_NAMESPACE},
        },
    )
    value = asdict(Suspension(reason, "ops", 1.8e9)) if reason else asdict(Suspension())
    configmap.setdefault("data", {})[SUSPENSION_KEY] = json.dumps(value)


def test_a_wave_that_would_change_a_suspended_cluster_waits_and_resume_lets_it_go_on() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    suspend(rig, "eu-1")
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert result.report.message.startswith("suspended: eu-1: suspended by ops at "), result.report.message
    assert result.report.message.endswith(": incident 42")
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}
    waits = [e for e in rig.events if e.step is Step.GATE_WAIT and e.waiting is Waiting.SUSPENDED]
    assert [e.wave for e in waits] == ["rest"]
    assert [e.cluster for e in rig.events if e.step is Step.CLUSTER_SUSPENDED] == ["eu-1"]

    suspend(rig, "eu-1", "")
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert rig.applies() == {"canary": 1, "eu-1": 1, "us-1": 1}
    assert rig.state("eu-1").phase is SyncPhase.HEALTHY


def test_a_suspended_cluster_gets_no_drift_repair_from_the_job_or_the_pass() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    for cluster in rig.clusters.values():
        cluster.delete("v1", "Namespace", "app")
    suspend(rig, "us-1")
    rig.events.clear()
    repaired = rig.fleet_pass.heal(rig.stop)
    assert {cs.cluster for cs in repaired} == {"canary", "eu-1"}
    waiting = [e for e in rig.events if e.step is Step.DRIFT_REPAIR_WAITING]
    assert [(e.cluster, e.waiting) for e in waiting] == [("us-1", Waiting.SUSPENDED)]
    rig.run()
    assert rig.applies() == {"canary": 2, "eu-1": 2, "us-1": 1}, "us-1 was written while suspended"
