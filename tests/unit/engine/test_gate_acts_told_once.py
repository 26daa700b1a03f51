"""A person's act at a manual gate meets what holds a wave after it, through in-memory clusters: a
promotion of a wave that a maintenance window then holds, or an abort of a wave waiting at its gate,
is told once (``promoted``, ``rollout-aborted``: each a notification), not again by every pass that
finds the wave still held, nor by a restarted agent, while each pass still says why the wave waits."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.config.windows import MaintenanceWindow, WindowKind
from syncer.domain.gates import Abort, PromotedBy, Promotion
from syncer.domain.progress import Step
from syncer.domain.selectors import LabelSelector
from syncer.engine.fleet_pass import FleetPass
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PersonActs
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet, options

PROD = LabelSelector.from_dict({"matchLabels": {"tier": "prod"}})
FREEZE = MaintenanceWindow("freeze", WindowKind.DENY, "* * * * *", 180.0, UTC, PROD)


class GatedRig(Rig):
    """The pass's rig with a manual gate before the ``rest`` wave (eu-1, us-1), inside a deny window
    that is always active when ``frozen``."""

    def __init__(self, frozen: bool = False) -> None:
        self.frozen = frozen
        super().__init__()

    def new_pass(self) -> FleetPass:
        gate = WaveGate(max_concurrent=2, health_timeout=0.0, bake=0.0)
        canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}), gate)
        rest = WavePolicy("rest", 100, None, replace(gate, manual=True))
        policy = RolloutPolicy((canary, rest), windows=(FREEZE,) if self.frozen else ())
        chosen = replace(options(), rollout=policy)
        return unfenced_pass(self.revisions, self.clusters.__getitem__, chosen, self.events.append)

    def acts(self, cluster: str) -> PersonActs:
        return PersonActs(self.clusters[cluster], STATE_NAMESPACE)

    def told(self, step: Step, passes: int) -> list[str]:
        """What ``passes`` passes told as ``step`` (the last of them by a restarted agent)."""
        found = []
        for count in range(passes):
            if count == passes - 1:
                self.fleet_pass = self.new_pass()
            result = self.run()
            assert result.report is not None
            found += [e.reason for e in self.events if e.step is step]
        return found


def test_a_promotion_held_by_a_window_is_told_once_and_honoured_when_the_window_is_overridden() -> None:
    rig = GatedRig(frozen=True)
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    for name in ("eu-1", "us-1"):
        rig.acts(name).record_promotion(Promotion("rest", "rev-1", (PromotedBy("alice", 1.8e9),)))

    assert rig.told(Step.PROMOTED, passes=3) == ["promoted by alice"]
    result = rig.run()
    assert result.report is not None
    assert result.report.message.startswith("outside maintenance window: eu-1: deny window freeze")
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}

    for name in ("eu-1", "us-1"):
        rig.acts(name).record_window_override("CVE fix", 4e9)
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert rig.applies() == {"canary": 1, "eu-1": 1, "us-1": 1}
    assert rig.steps(Step.PROMOTED, Step.AWAITING_PROMOTION) == []


def test_an_abort_at_a_manual_gate_is_told_once_and_every_pass_still_halts_with_its_reason() -> None:
    rig = GatedRig()
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    for name in ("canary", "eu-1", "us-1"):
        rig.acts(name).record_abort(Abort("rev-1", "ops", "latency", 1.8e9))

    # Once per wave it ends: the canary's, which had passed (it goes back, here to nothing: rev-1 is
    # the first revision), and the rest's, which waited at its gate.
    told = rig.told(Step.ROLLOUT_ABORTED, passes=3)
    assert [r.split(": ")[-1] for r in told] == ["latency", "latency"]
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.HALTED, result.report
    assert result.report.message.startswith("canary: refused: failed before (content): aborted by ops at ")
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}
