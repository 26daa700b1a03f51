"""Each wave the rollout machine looks at is a span ``syncer.wave`` of the pass, from its look to the
next, holding its clusters' applies and the gate's result. In-memory clusters; spans in memory."""

from __future__ import annotations

import pytest

from tests.support.spans import recorded_spans
from tests.unit.engine.test_fleet_pass import Rig, fleet


def test_each_wave_is_a_span_of_the_pass_holding_its_applies_and_its_gates_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporter = recorded_spans(monkeypatch)
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    spans = exporter.get_finished_spans()
    (root,) = [s for s in spans if s.name == "syncer.pass"]
    waves = {str((s.attributes or {})["syncer.wave"]): s for s in spans if s.name == "syncer.wave"}
    assert set(waves) == {"canary", "rest"}
    for wave in waves.values():
        assert wave.parent is not None
        assert wave.parent.span_id == root.context.span_id
        assert (wave.attributes or {})["syncer.revision"] == "rev-1"
        assert (wave.attributes or {})["syncer.result"] == "proceed"
    assert waves["canary"].end_time is not None
    assert waves["rest"].start_time is not None
    assert waves["canary"].end_time <= waves["rest"].start_time
    applies = {
        str((s.attributes or {})["syncer.cluster"]): s for s in spans if s.name == "syncer.cluster.apply"
    }
    expected = {"canary": "canary", "eu-1": "rest", "us-1": "rest"}
    for cluster, apply in applies.items():
        assert apply.parent is not None
        assert apply.parent.span_id == waves[expected[cluster]].context.span_id, cluster
    assert set(applies) == set(expected)
