"""A person's pin (``syncer rollback``) in the pass, through in-memory clusters: the pinned cluster
gets its pinned revision (rebuilt through the revisions, as any rollback target is) and no newer one,
the rest of the fleet follows the tip, the history says who pinned it, and lifting the pin lets the
cluster follow the tip again."""

from __future__ import annotations

import json
from dataclasses import asdict

from syncer.domain.progress import Step
from syncer.domain.sync_state import Pin, SyncPhase
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PIN_KEY
from syncer.status.history import history_of
from syncer.status.state_store import STATE_CONFIGMAP
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet


def pin(rig: Rig, cluster: str, revision: str) -> None:
    """Record the pin beside the state (the in-memory cluster keeps no other manager's keys through
    a state write, where server-side apply merges them: a test pins again before each pass)."""
    key = ("v1", "ConfigMap", STATE_NAMESPACE, STATE_CONFIGMAP)
    configmap = rig.clusters[cluster].objects[key]
    value = asdict(Pin(revision, "ops", "bad canary", 1.8e9) if revision else Pin())
    configmap.setdefault("data", {})[PIN_KEY] = json.dumps(value)


def _on(rig: Rig) -> dict[str, str]:
    return {name: rig.state(name).revision for name in rig.clusters}


def test_a_pinned_cluster_goes_back_and_stays_until_the_pin_is_lifted() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    rig.revisions.push(fleet("rev-2"))
    assert rig.run().synced
    pin(rig, "eu-1", "rev-1")

    result = rig.run()
    assert result.report is not None
    assert result.report.outcome in {RolloutOutcome.APPLIED, RolloutOutcome.UNCHANGED}, result.report
    assert _on(rig) == {"canary": "rev-2", "eu-1": "rev-1", "us-1": "rev-2"}
    assert rig.state("eu-1").phase is SyncPhase.HEALTHY
    assert rig.revisions.rebuilt == ["rev-1"]
    assert [e.cluster for e in rig.events if e.step is Step.CLUSTER_PINNED] == ["eu-1"]
    configmap = rig.clusters["eu-1"].objects[("v1", "ConfigMap", STATE_NAMESPACE, STATE_CONFIGMAP)]
    last = history_of(configmap, "eu-1")[-1]
    assert (last.revision, str(last.outcome)) == ("rev-1", "healthy")
    assert "for syncer rollback by ops: bad canary" in last.by

    # A newer tip goes everywhere but to the pinned cluster.
    rig.revisions.push(fleet("rev-3"))
    pin(rig, "eu-1", "rev-1")
    rig.run()
    assert _on(rig) == {"canary": "rev-3", "eu-1": "rev-1", "us-1": "rev-3"}

    pin(rig, "eu-1", "")
    rig.run()
    assert _on(rig) == {"canary": "rev-3", "eu-1": "rev-3", "us-1": "rev-3"}


def test_a_pinned_revision_that_cannot_be_had_leaves_the_cluster_where_it_is() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    rig.revisions.push(fleet("rev-2"))
    assert rig.run().synced
    rig.revisions.unrebuildable.add("rev-1")
    pin(rig, "us-1", "rev-1")
    rig.revisions.push(fleet("rev-3"))
    rig.run()
    assert _on(rig) == {"canary": "rev-3", "eu-1": "rev-3", "us-1": "rev-2"}
    assert [e.cluster for e in rig.events if e.step is Step.PIN_UNAVAILABLE] == ["us-1"]


def test_drift_on_a_pinned_cluster_is_repaired_to_its_pinned_revision() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    rig.revisions.push(fleet("rev-2"))
    assert rig.run().synced
    pin(rig, "eu-1", "rev-1")
    rig.run()
    assert _on(rig)["eu-1"] == "rev-1"
    for cluster in rig.clusters.values():
        cluster.delete("v1", "Namespace", "app")
    pin(rig, "eu-1", "rev-1")
    repaired = {cs.cluster: cs for cs in rig.fleet_pass.heal(rig.stop)}
    assert set(repaired) == {"canary", "eu-1", "us-1"}
    labels = {
        n: c.get("v1", "Namespace", "app")["metadata"]["labels"]["rev"] for n, c in rig.clusters.items()
    }
    assert labels == {"canary": "rev-2", "eu-1": "rev-1", "us-1": "rev-2"}
    assert _on(rig) == {"canary": "rev-2", "eu-1": "rev-1", "us-1": "rev-2"}
