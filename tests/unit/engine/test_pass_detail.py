"""What a pass tells beyond its steps, for the fleet page's detail of a cluster: the change set of
each apply on its event, each object's health on a health check's event, and each cluster's history
of revisions in the pass's result, as the clusters record it."""

from __future__ import annotations

from syncer.domain.changeset import EntryOutcome
from syncer.domain.health import Health
from syncer.domain.plans import Action
from syncer.domain.progress import Step
from syncer.domain.revision_history import Outcome
from syncer.status.history import history_of
from syncer.status.state_store import STATE_CONFIGMAP
from tests.unit.engine.test_fleet_pass import CLUSTERS, STATE_NAMESPACE, Rig, fleet, rig

__all__ = ["rig"]  # fixture


def test_an_apply_tells_its_change_set_and_a_health_check_each_objects_health(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    applied = [e for e in rig.events if e.step is Step.APPLIED and e.cluster == "canary"]
    assert len(applied) == 1
    changes = applied[0].changes
    assert changes is not None
    assert (changes.cluster, changes.revision) == ("canary", "rev-1")
    assert [(e.subject, e.action, e.outcome) for e in changes.entries] == [
        ("Namespace/app", Action.CREATE, EntryOutcome.APPLIED)
    ]
    checked = [e for e in rig.events if e.step is Step.HEALTH_CHECKED and e.cluster == "canary"]
    assert checked
    assert [(o.subject, o.health) for o in checked[-1].objects_health] == [("Namespace/app", Health.HEALTHY)]


def test_a_pass_ends_with_each_clusters_history_as_the_cluster_records_it(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    result = rig.run()
    assert set(result.histories) == set(CLUSTERS)
    for name in CLUSTERS:
        recorded = rig.clusters[name].get("v1", "ConfigMap", STATE_CONFIGMAP, STATE_NAMESPACE)
        assert result.histories[name] == history_of(recorded, name)
        assert [(e.revision, e.outcome) for e in result.histories[name]] == [("rev-1", Outcome.HEALTHY)]
    # A pass with nothing to do still gives the history it read.
    again = rig.run()
    assert [(e.revision, e.outcome) for e in again.histories["canary"]] == [("rev-1", Outcome.HEALTHY)]
