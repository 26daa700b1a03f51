"""The diff says where the sync will wait, on the real 3-cluster fleet: for a suspended cluster, a
manual gate (before and while awaiting promotion) the diff of the revision holds every cluster the
sync then leaves alone (the rest of the wave and the later waves too), says why, and still lists
what each will do; the sync that follows writes exactly where the diff showed no hold. A cluster a
person pinned to another revision (``syncer rollback``) is held alone, planned against its pinned
revision: the agent's pass that follows (``FleetPass``, which rolls pins back) writes to each cluster
what the diff said and leaves it on the revision the diff said. Namespaces only: healthy once they
exist, no controller runs."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain.gates import PromotedBy, Promotion
from syncer.domain.objects import DesiredFleet
from syncer.domain.plans import Action, FleetPlan
from syncer.domain.progress import PassEvent, Step
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import Pin, Suspension
from syncer.engine.diff import ClusterTarget, DiffOptions, diff_fleet
from syncer.engine.rollout_model import RolloutOptions
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from syncer.status.acts import PersonActs
from tests.integration.conftest import FleetHandle
from tests.support.fleet_repo import FleetRepo
from tests.support.memory_revisions import MemoryRevisions
from tests.support.unfenced import unfenced_pass

pytestmark = pytest.mark.integration

Outcomes = dict[str, tuple[bool, str]]
"""Per cluster: whether anything is written to it, and the revision it is on after."""


def policy(*, manual: bool = False) -> RolloutPolicy:
    gate = WaveGate(max_concurrent=2, health_timeout=30, bake=0)
    canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}), gate)
    return RolloutPolicy((canary, WavePolicy("rest", 100, None, replace(gate, manual=manual))))


@dataclass(frozen=True)
class Synced:
    """What one pass did: how its rollout ended, and the objects it wrote to each cluster, by the
    revision it applied there (a pinned cluster's rollback included)."""

    outcome: str
    written: dict[str, dict[str, int]]


def sync(
    clients: dict[str, ClusterClient],
    prefix: str,
    fleet: DesiredFleet,
    rollout: RolloutPolicy,
    *earlier: DesiredFleet,
) -> Synced:
    """One pass of the agent (``FleetPass.run_pass``) with ``fleet`` in force: the clusters a person
    pinned to one of the ``earlier`` revisions are rolled back to it in the same pass, the others
    get ``fleet``."""
    options = RolloutOptions(rollout=rollout, state_namespace=f"{prefix}-state", health_poll=0.5)
    revisions = MemoryRevisions()
    for pushed in (*earlier, fleet):
        revisions.push(pushed)
    written: dict[str, dict[str, int]] = {}

    def count(event: PassEvent) -> None:
        if event.step is Step.APPLIED and event.objects:
            by_revision = written.setdefault(event.cluster, {})
            by_revision[event.revision] = by_revision.get(event.revision, 0) + event.objects

    result = unfenced_pass(revisions, clients.__getitem__, options, count, known=clients).run_pass(
        threading.Event()
    )
    assert result.report is not None, result.advance
    return Synced(str(result.report.outcome), written)


def diff(
    fleet_handle: FleetHandle,
    prefix: str,
    fleet: DesiredFleet,
    rollout: RolloutPolicy,
    *earlier: DesiredFleet,
) -> FleetPlan:
    """``syncer diff`` of ``fleet``: a cluster pinned to one of the ``earlier`` revisions is planned
    against it (as the diff renders a pinned revision from the repository)."""
    targets = [ClusterTarget(n, str(fleet_handle.kubeconfig), n) for n in fleet_handle.names]
    pinned = {f.revision: f for f in (*earlier, fleet)}.get
    options = DiffOptions(rollout=rollout, state_namespace=f"{prefix}-state", pinned=pinned)
    return diff_fleet(fleet, targets, options)


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


def recorded(clients: dict[str, ClusterClient], prefix: str) -> dict[str, str]:
    """The revision each cluster's sync state records."""
    return {n: StateStore(c, f"{prefix}-state").load().state.revision for n, c in clients.items()}


def acts(clients: dict[str, ClusterClient], prefix: str, cluster: str) -> PersonActs:
    return PersonActs(clients[cluster], f"{prefix}-state")


def test_a_suspended_cluster_holds_its_wave_in_the_diff_as_in_the_sync(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    assert sync(clients, prefix, write(repo, "r1"), policy()).outcome == str(RolloutOutcome.APPLIED)
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

    assert sync(clients, prefix, second, policy()).outcome == str(RolloutOutcome.WAITING)
    assert revisions(clients, prefix) == {"canary": "r2", "eu-1": "r1", "us-1": "r1"}


def test_a_manual_gate_holds_before_and_while_awaiting_promotion_and_not_once_promoted(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    assert sync(clients, prefix, write(repo, "r1"), policy()).outcome == str(RolloutOutcome.APPLIED)
    second = write(repo, "r2")
    gated = policy(manual=True)

    before = diff(fleet, prefix, second, gated)
    assert shown(before) == {
        "canary": ("", "update"),
        "eu-1": ("awaiting-promotion", "update"),
        "us-1": ("awaiting-promotion", "update"),
    }
    assert sync(clients, prefix, second, gated).outcome == str(RolloutOutcome.WAITING)
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
    assert sync(clients, prefix, second, gated).outcome == str(RolloutOutcome.APPLIED)
    assert revisions(clients, prefix) == dict.fromkeys(clients, "r2")


def said_and_done(
    plan: FleetPlan, before: dict[str, str], synced: Synced, after: dict[str, str]
) -> tuple[Outcomes, Outcomes]:
    """Per cluster, what the diff said the sync would do and what the pass did: whether it writes to
    the cluster, and the revision the cluster records after. The diff says: a held cluster gets
    nothing and stays on what it recorded ``before``, unless it is pinned (``pinnedTo``: it goes to
    that revision); any other cluster goes to the revision diffed, written to when it has changes."""
    said = {
        c.cluster: (
            c.has_changes and (bool(c.pinned_to) or not c.blocked),
            c.pinned_to or (before[c.cluster] if c.blocked else plan.revision),
        )
        for c in plan.clusters
    }
    done = {n: (bool(synced.written.get(n)), on) for n, on in after.items()}
    return said, done


def test_a_cluster_pinned_to_another_revision_is_held_alone_in_the_diff_as_in_the_pass(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    first = write(repo, "r1")
    assert sync(clients, prefix, first, policy()).outcome == str(RolloutOutcome.APPLIED)
    acts(clients, prefix, "eu-1").record_pin(Pin("r1", "ops", "bad release", 1.0))
    second = write(repo, "r2")

    plan = diff(fleet, prefix, second, policy(), first)
    assert shown(plan) == {
        "canary": ("", "update"),
        "eu-1": ("pinned", "unchanged"),  # on its pinned r1 already
        "us-1": ("", "update"),  # the pass leaves eu-1 out of r2's waves: us-1's wave goes on
    }
    assert "pinned to r1 by ops" in next(c.blocked for c in plan.clusters if c.cluster == "eu-1")
    assert all(x.action is not Action.ERROR for c in plan.clusters for x in c.changes)

    before = recorded(clients, prefix)
    synced = sync(clients, prefix, second, policy(), first)
    assert synced.outcome == str(RolloutOutcome.APPLIED)
    said, done = said_and_done(plan, before, synced, recorded(clients, prefix))
    assert done == said
    assert said == {"canary": (True, "r2"), "eu-1": (False, "r1"), "us-1": (True, "r2")}
    assert synced.written == {"canary": {"r2": 1}, "us-1": {"r2": 1}}
    assert revisions(clients, prefix) == {"canary": "r2", "eu-1": "r1", "us-1": "r2"}


def test_a_pending_pin_rollback_is_what_the_diff_says_and_what_the_pass_does(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    first = write(repo, "r1")
    assert sync(clients, prefix, first, policy()).outcome == str(RolloutOutcome.APPLIED)
    second = write(repo, "r2")
    assert sync(clients, prefix, second, policy(), first).outcome == str(RolloutOutcome.APPLIED)
    # A person pins eu-1 back to r1 (``syncer rollback``); no pass has put it back yet.
    acts(clients, prefix, "eu-1").record_pin(Pin("r1", "ops", "bad release", 1.0))

    plan = diff(fleet, prefix, second, policy(), first)
    assert revisions(clients, prefix) == dict.fromkeys(clients, "r2"), "the diff wrote nothing"

    # The pass that follows (the agent's, rolling pins back) does per cluster what the diff said,
    # and the diff's exit code (1: a change is due) says whether the pass writes anything.
    before = recorded(clients, prefix)
    synced = sync(clients, prefix, second, policy(), first)
    assert synced.outcome == str(RolloutOutcome.UNCHANGED), "r2 is on every cluster it goes to"
    said, done = said_and_done(plan, before, synced, recorded(clients, prefix))
    assert done == said
    assert plan.has_changes == any(wrote for wrote, _ in done.values())
    assert not plan.refused

    assert said == {"canary": (False, "r2"), "eu-1": (True, "r1"), "us-1": (False, "r2")}
    assert synced.written == {"eu-1": {"r1": 1}}, "only eu-1's Namespace, relabelled to r1"
    eu = next(c for c in plan.clusters if c.cluster == "eu-1")
    assert (eu.hold, eu.pinned_to) == ("pinned", "r1")
    assert "pinned to r1 by ops" in eu.blocked
    assert shown(plan) == {
        "canary": ("", "unchanged"),
        "eu-1": ("pinned", "update"),
        "us-1": ("", "unchanged"),
    }
    assert revisions(clients, prefix) == {"canary": "r2", "eu-1": "r1", "us-1": "r2"}
