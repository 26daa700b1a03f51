"""What the diff shows where the sync halts: from the first wave where a cluster refuses the
revision on, every cluster is blocked (the sync applies nothing there); earlier waves stay as planned."""

from __future__ import annotations

from syncer.domain.plans import ClusterPlan, WavePlan
from syncer.engine.diff import blocked_after_refusal


def test_the_refusing_wave_and_every_later_wave_are_blocked_with_where_the_sync_halts() -> None:
    refused = ClusterPlan("eu-1", blocked="refused: failed before (live): x", refused=True)
    waves = (
        WavePlan("canary", (ClusterPlan("canary"),)),
        WavePlan("eu", (refused, ClusterPlan("eu-2"), ClusterPlan("eu-3", error="unreachable"))),
        WavePlan("us", (ClusterPlan("us-1"),)),
    )
    shown = blocked_after_refusal(waves)
    blocked = {c.cluster: c.blocked for w in shown for c in w.clusters}
    halts = "the sync halts at wave eu: eu-1 refuse(s) the revision"
    assert blocked == {
        "canary": "",
        "eu-1": "refused: failed before (live): x",
        "eu-2": halts,
        "eu-3": "",  # an unreadable cluster keeps its error
        "us-1": halts,
    }
    assert blocked_after_refusal(waves[:1]) == waves[:1]
