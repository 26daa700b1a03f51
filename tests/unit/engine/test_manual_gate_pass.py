"""Manual gates in the pass, through in-memory clusters: a wave with ``approval: manual`` waits,
pass after pass and without writing to its clusters, until a promotion naming the waiting revision
is recorded beside their states (by as many distinct people as a cluster two-person rule asks for);
an abort recorded there ends the wave (halting a wave nothing was applied to) until a retry."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.config.two_person import TwoPersonRule
from syncer.domain.gates import Abort, PromotedBy, Promotion
from syncer.domain.progress import Step, Waiting
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import RetryRequest, SyncPhase
from syncer.engine.fleet_pass import FleetPass
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import ABORT_KEY, PROMOTION_KEY, RETRY_KEY
from syncer.status.state_store import STATE_CONFIGMAP
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet, options


class GatedRig(Rig):
    """The pass's rig with a manual gate before the ``rest`` wave (eu-1, us-1)."""

    def __init__(self, rules: tuple[TwoPersonRule, ...] = ()) -> None:
        self.rules = rules
        super().__init__()

    def new_pass(self) -> FleetPass:
        gate = WaveGate(max_concurrent=2, health_timeout=0.0, bake=0.0)
        canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}), gate)
        rest = WavePolicy("rest", 100, None, replace(gate, manual=True))
        chosen = replace(options(), rollout=RolloutPolicy((canary, rest)), two_person=self.rules)
        return unfenced_pass(self.revisions, self.clusters.__getitem__, chosen, self.events.append)

    def act(self, cluster: str, key: str, value: dict[str, Any]) -> None:
        """A person's act, as server-side apply merges it into the ConfigMap beside the state."""
        configmap = self.clusters[cluster].objects.setdefault(
            ("v1", "ConfigMap", STATE_NAMESPACE, STATE_CONFIGMAP),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": STATE_CONFIGMAP, "namespace": STATE_NAMESPACE},
            },
        )
        configmap.setdefault("data", {})[key] = json.dumps(value)

    def promote(self, revision: str, *people: str) -> None:
        promotion = Promotion("rest", revision, tuple(PromotedBy(p, 1.8e9) for p in people))
        for name in ("eu-1", "us-1"):
            self.act(name, PROMOTION_KEY, asdict(promotion))


def test_a_manual_gate_waits_without_writing_until_the_waiting_revision_is_promoted() -> None:
    rig = GatedRig()
    rig.revisions.push(fleet("rev-1"))
    for _ in range(2):  # pass after pass, the wave waits and nothing is written to it
        result = rig.run()
        assert result.report is not None
        assert result.report.outcome is RolloutOutcome.WAITING, result.report
        assert result.report.message == "waiting for promote of rev-1 at wave rest"
        assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}
    waits = [e for e in rig.events if e.step is Step.AWAITING_PROMOTION]
    assert [(e.wave, e.revision, e.waiting) for e in waits] == [("rest", "rev-1", Waiting.PROMOTION)]
    awaiting = rig.state("eu-1").awaiting
    assert (awaiting.wave, awaiting.revision) == ("rest", "rev-1")
    assert awaiting.since > 0

    rig.promote("rev-0", "alice")  # a promotion of another revision opens nothing
    assert rig.run().report.outcome is RolloutOutcome.WAITING  # type: ignore[union-attr]
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}

    rig.promote("rev-1", "alice")
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert rig.applies() == {"canary": 1, "eu-1": 1, "us-1": 1}
    assert [e.reason for e in rig.events if e.step is Step.PROMOTED] == ["promoted by alice"]
    assert rig.state("eu-1").phase is SyncPhase.HEALTHY
    assert not rig.state("eu-1").awaiting.active


def test_a_cluster_two_person_rule_asks_two_distinct_people_to_promote() -> None:
    rule = TwoPersonRule(
        "prod", signers=2, clusters=LabelSelector.from_dict({"matchLabels": {"tier": "prod"}})
    )
    rig = GatedRig((rule,))
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.promote("rev-1", "alice", "alice")
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert (
        result.report.message == "waiting for promote of rev-1 at wave rest (1 of 2 distinct people: alice)"
    )
    assert rig.applies()["eu-1"] == 0
    rig.promote("rev-1", "alice", "bob")
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report


def test_an_abort_at_a_manual_gate_halts_the_revision_until_a_retry() -> None:
    rig = GatedRig()
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    for name in ("canary", "eu-1", "us-1"):
        rig.act(name, ABORT_KEY, asdict(Abort("rev-1", "ops", "latency", 1.8e9)))
    rig.promote("rev-1", "alice")
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.HALTED, result.report
    assert result.report.message.startswith("aborted by ops at ")
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}
    # The canary's wave had passed: it is aborted too (it goes back to the revision it ran healthy
    # before, none here), then the waiting wave.
    assert [e.wave for e in rig.events if e.step is Step.ROLLOUT_ABORTED] == ["canary", "rest"]
    assert not rig.state("eu-1").awaiting.active  # status no longer shows it waiting

    for name in ("canary", "eu-1", "us-1"):  # a retry made after the abort lets the revision go on
        rig.act(name, RETRY_KEY, asdict(RetryRequest("rev-1", "ops", "fixed", 1.9e9)))
    rig.promote("rev-1", "alice")  # (in memory a state write replaces the whole ConfigMap)
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
