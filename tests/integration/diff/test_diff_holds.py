"""The diff says where the sync will wait, on the real 3-cluster fleet: for a suspended cluster, a
manual gate (before and while awaiting promotion) and a cluster pinned to another revision, the diff
of the revision holds every cluster the sync then leaves alone (the rest of the wave and the later
waves too), says why, and still lists what each will do; the sync that follows writes exactly where
the diff showed no hold. Namespaces only: healthy once they exist, no controller runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain.gates import PromotedBy, Promotion
from syncer.domain.objects import DesiredFleet
from syncer.domain.plans import Action, FleetPlan
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import Pin, Suspension
from syncer.engine.diff import ClusterTarget, DiffOptions, diff_fleet
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions, RolloutOutcome
from syncer.kube import ClusterClient
from syncer.status import StateStore
from syncer.status.acts import PersonActs
from tests.integration.conftest import FleetHandle
from tests.support.fleet_repo import FleetRepo
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration


def policy(*, manual: bool = False) -> RolloutPolicy:
    gate = WaveGate(max_concurrent=2, health_timeout=30, bake=0)
    canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}), gate)
    return RolloutPolicy((canary, WavePolicy("rest", 100, None, replace(gate, manual=manual))))


def sync(clients: dict[str, ClusterClient], prefix: str, fleet: DesiredFleet, rollout: RolloutPolicy) -> str:
    options = RolloutOptions(rollout=rollout, state_namespace=f"{prefix}-state", health_poll=0.5)
    return str(FleetRollout(clients, options, hooks=UNFENCED_HOOKS).sync(fleet).outcome)


def diff(fleet_handle: FleetHandle, prefix: str, fleet: DesiredFleet, rollout: RolloutPolicy) -> FleetPlan:
    targets = [ClusterTarget(n, str(fleet_handle.kubeconfig), n) for n in fleet_handle.names]
    return diff_fleet(fleet, targets, DiffOptions(rollout=rollout, state_namespace=f"{prefix}-state"))


def shown(plan: FleetPlan) -> dict[str, tuple[str, str]]:
    """Per cluster: what holds it, and the action of the prefix's Namespace (what it will do)."""
    return {
        c.cluster: (c.hold, next((str(x.action) for x in c.changes if x.key.kind == "Namespace"), ""))
        for c in plan.clusters
    }


def revisions(clients: dict[str, ClusterClient], prefix: str) -> dict[str, str]:
    """The revision label each cluster's live Namespace carries."""
    return {n: c.get("v1", "Namespace", prefix)["metadata"]["labels"]["rev"] for n, c in clients.items()}


def write(repo: FleetRepo, revision: str) -> DesiredFleet:
    return repo.write_documents(revision, [repo.namespace({"rev": revision})])


def acts(clients: dict[str, ClusterClient], prefix: str, cluster: str) -> PersonActs:
    return PersonActs(clients[cluster], f"{prefix}-state")


def test_a_suspended_cluster_holds_its_wave_in_the_diff_as_in_the_sync(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    assert sync(clients, prefix, write(repo, "r1"), policy()) == str(RolloutOutcome.APPLIED)
    acts(clients, prefix, "us-1").record_suspension(Suspension("incident 7", "ops", 1.0))
    second = write(repo, "r2")

    plan = diff(fleet, prefix, second, policy())
    assert shown(plan) == {
        "canary": ("", "update"),
        "eu-1": ("wave", "update"),
        "us-1": ("suspended", "update"),
    }
    assert plan.has_changes, "a change is due: the diff exits 1"
    held = {c.cluster: c.blocked for c in plan.clusters}
    assert "incident 7" in held["us-1"]
    assert held["eu-1"].startswith("its wave waits: us-1: suspended: suspended by ops")

    assert sync(clients, prefix, second, policy()) == str(RolloutOutcome.WAITING)
    assert revisions(clients, prefix) == {"canary": "r2", "eu-1": "r1", "us-1": "r1"}


def test_a_manual_gate_holds_before_and_while_awaiting_promotion_and_not_once_promoted(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    assert sync(clients, prefix, write(repo, "r1"), policy()) == str(RolloutOutcome.APPLIED)
    second = write(repo, "r2")
    gated = policy(manual=True)

    before = diff(fleet, prefix, second, gated)
    assert shown(before) == {
        "canary": ("", "update"),
        "eu-1": ("awaiting-promotion", "update"),
        "us-1": ("awaiting-promotion", "update"),
    }
    assert sync(clients, prefix, second, gated) == str(RolloutOutcome.WAITING)
    assert revisions(clients, prefix) == {"canary": "r2", "eu-1": "r1", "us-1": "r1"}

    waiting = diff(fleet, prefix, second, gated)  # the canary passed; the gate records the wait
    assert shown(waiting) == {
        "canary": ("", "unchanged"),
        "eu-1": ("awaiting-promotion", "update"),
        "us-1": ("awaiting-promotion", "update"),
    }
    assert "waiting for promote of r2 at wave rest" in next(
        c.blocked for c in waiting.clusters if c.cluster == "eu-1"
    )

    acts(clients, prefix, "eu-1").record_promotion(Promotion("rest", "r2", (PromotedBy("ops", 2.0),)))
    promoted = diff(fleet, prefix, second, gated)
    assert {n: h for n, (h, _) in shown(promoted).items()} == {"canary": "", "eu-1": "", "us-1": ""}
    assert sync(clients, prefix, second, gated) == str(RolloutOutcome.APPLIED)
    assert revisions(clients, prefix) == dict.fromkeys(clients, "r2")


def test_a_cluster_pinned_to_another_revision_holds_its_wave_in_the_diff_as_in_the_sync(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    assert sync(clients, prefix, write(repo, "r1"), policy()) == str(RolloutOutcome.APPLIED)
    acts(clients, prefix, "eu-1").record_pin(Pin("r1", "ops", "bad release", 1.0))
    second = write(repo, "r2")

    plan = diff(fleet, prefix, second, policy())
    assert shown(plan) == {
        "canary": ("", "update"),
        "eu-1": ("pinned", "update"),
        "us-1": ("wave", "update"),
    }
    assert "pinned to r1 by ops" in next(c.blocked for c in plan.clusters if c.cluster == "eu-1")
    sync(clients, prefix, second, policy())
    assert revisions(clients, prefix) == {"canary": "r2", "eu-1": "r1", "us-1": "r1"}
    state = StateStore(clients["eu-1"], f"{prefix}-state").load().state
    assert state.revision == "r1"
    assert not [c for c in plan.clusters if c.hold == "" and c.cluster != "canary"]
    assert all(x.action is not Action.ERROR for c in plan.clusters for x in c.changes)


def test_a_pending_pin_rollback_shows_what_the_pinned_cluster_gets_from_its_pinned_revision(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    first = write(repo, "r1")
    assert sync(clients, prefix, first, policy()) == str(RolloutOutcome.APPLIED)
    second = write(repo, "r2")
    assert sync(clients, prefix, second, policy()) == str(RolloutOutcome.APPLIED)
    # A person pins eu-1 back to r1; the sync has not put it back yet.
    acts(clients, prefix, "eu-1").record_pin(Pin("r1", "ops", "bad release", 1.0))

    targets = [ClusterTarget(n, str(fleet.kubeconfig), n) for n in fleet.names]
    options = DiffOptions(
        rollout=policy(), state_namespace=f"{prefix}-state", pinned={"r1": first, "r2": second}.get
    )
    plan = diff_fleet(second, targets, options)
    eu = next(c for c in plan.clusters if c.cluster == "eu-1")
    assert (eu.hold, eu.pinned_to) == ("pinned", "r1")
    namespace = next(x for x in eu.changes if x.key.kind == "Namespace")
    assert namespace.action is Action.UPDATE, "the rollback to r1 is a change"
    assert plan.has_changes, "the diff's exit code says a change is due"
    assert all(not c.has_changes for c in plan.clusters if c.cluster != "eu-1"), "the others are on r2"
    assert "pinned to r1 by ops" in eu.blocked
    # Without the pinned revision the diff says nothing is due: what it said before.
    blind = diff_fleet(second, targets, DiffOptions(rollout=policy(), state_namespace=f"{prefix}-state"))
    assert not blind.has_changes
    assert revisions(clients, prefix) == dict.fromkeys(clients, "r2"), "the diff wrote nothing"
