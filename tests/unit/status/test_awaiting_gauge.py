"""``syncer_wave_awaiting_approval`` follows the manual gate's steps: 1 for the revision a wave waits
for, 0 once it is promoted or aborted, its gate judges it, or when a newer revision waits there
instead."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.status.metrics import SyncerMetrics
from syncer.status.report import EventReporter


def test_the_gauge_follows_the_gate() -> None:
    registry = CollectorRegistry()
    reporter = EventReporter(SyncerMetrics(registry), {}, "syncer")

    def value(revision: str) -> float | None:
        return registry.get_sample_value(
            "syncer_wave_awaiting_approval", {"wave": "eu", "revision": revision}
        )

    reporter(PassEvent(Step.AWAITING_PROMOTION, "eu", revision="r1", waiting=Waiting.PROMOTION))
    assert value("r1") == 1
    reporter(PassEvent(Step.AWAITING_PROMOTION, "eu", revision="r2", waiting=Waiting.PROMOTION))
    assert (value("r1"), value("r2")) == (0, 1)
    reporter(PassEvent(Step.PROMOTED, "eu", revision="r2", reason="promoted by alice"))
    assert value("r2") == 0
    reporter(PassEvent(Step.AWAITING_PROMOTION, "eu", revision="r3", waiting=Waiting.PROMOTION))
    reporter(PassEvent(Step.ROLLOUT_ABORTED, "eu", revision="r3", reason="aborted"))
    assert value("r3") == 0


def test_a_wave_another_replica_started_no_longer_counts_as_awaiting() -> None:
    # A sharded replica owning none of the wave's clusters is told no promotion (their owners record
    # the end of the wait and tell it); it finds the wave started, its gate judging it.
    registry = CollectorRegistry()
    reporter = EventReporter(SyncerMetrics(registry), {}, "syncer")
    reporter(PassEvent(Step.AWAITING_PROMOTION, "eu", revision="r1", waiting=Waiting.PROMOTION))
    reporter(PassEvent(Step.GATE_PROCEED, "canary", revision="r1"))
    labels = {"wave": "eu", "revision": "r1"}
    assert registry.get_sample_value("syncer_wave_awaiting_approval", labels) == 1
    reporter(PassEvent(Step.GATE_WAIT, "eu", revision="r1", waiting=Waiting.HEALTH))
    assert registry.get_sample_value("syncer_wave_awaiting_approval", labels) == 0
    assert (
        registry.get_sample_value("syncer_wave_awaiting_approval", {"wave": "canary", "revision": "r1"})
        is None
    )
