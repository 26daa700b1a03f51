"""A person's pin meets the rollout's waves, through in-memory clusters: a pinned cluster is left out
of the revision in force, but the other clusters keep the waves the whole fleet gives them, so a pin
never turns a cluster behind a manual gate into the canary of the next revision."""

from __future__ import annotations

from dataclasses import replace

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain.gates import PromotedBy, Promotion
from syncer.domain.progress import Step
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import Pin
from syncer.engine.fleet_pass import FleetPass
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PersonActs
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet, options


class GatedRig(Rig):
    """The pass's rig with a manual gate before the ``rest`` wave (eu-1, us-1)."""

    def new_pass(self) -> FleetPass:
        gate = WaveGate(max_concurrent=2, health_timeout=0.0, bake=0.0)
        canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}), gate)
        rest = WavePolicy("rest", 100, None, replace(gate, manual=True))
        chosen = replace(options(), rollout=RolloutPolicy((canary, rest)))
        return unfenced_pass(self.revisions, self.clusters.__getitem__, chosen, self.events.append)

    def acts(self, cluster: str) -> PersonActs:
        return PersonActs(self.clusters[cluster], STATE_NAMESPACE)

    def promote(self, revision: str) -> None:
        for name in ("eu-1", "us-1"):
            self.acts(name).record_promotion(Promotion("rest", revision, (PromotedBy("alice", 1.8e9),)))


def test_pinning_the_canary_back_does_not_make_a_cluster_behind_the_manual_gate_the_next_canary() -> None:
    rig = GatedRig()
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.promote("rev-1")
    assert rig.run().synced
    rig.revisions.push(fleet("rev-2"))
    rig.run()  # the canary takes rev-2; the rest waits for a promotion of it
    # A bad canary at night: it is put back on rev-1 (operate.md), and a fix is pushed.
    rig.acts("canary").record_pin(Pin("rev-1", "ops", "canary broke", 1.8e9))
    rig.revisions.push(fleet("rev-3"))
    before = rig.applies()

    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert result.report.message == "waiting for promote of rev-3 at wave rest"
    assert rig.applies() == {**before, "canary": before["canary"] + 1}, "only the pinned canary is written"
    on = {n: rig.state(n).revision for n in rig.clusters}
    assert on == {"canary": "rev-1", "eu-1": "rev-1", "us-1": "rev-1"}
    assert [e.wave for e in rig.events if e.step is Step.AWAITING_PROMOTION] == ["rest"]
