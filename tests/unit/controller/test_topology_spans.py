"""A look at the Redis topology is the span ``controller.topology`` under the reconcile's, with each
formation step as an event of it, the verdict as its result, and a failed look as an error. The look
itself is a stand-in here (the real one needs Redis servers: tests/integration/topology); spans are
kept in memory."""

from __future__ import annotations

import pytest

from syncer.controller.formation import FormationStep
from syncer.controller.model import ClusterSpec
from syncer.controller.status import TopologyVerdict
from syncer.controller.topology_link import TopologyPass
from syncer.controller.topology_model import TopologyOptions
from syncer.controller.traces import topology_look
from syncer.tracing import span
from tests.support.spans import recorded_spans

SPEC = ClusterSpec("sessions", "shop", "uid-1", 3, "7.2", shards=2)


def forming(*steps: FormationStep, verdict: TopologyVerdict) -> object:
    def look(access: TopologyOptions) -> TopologyPass:
        for step in steps:
            access.told(step)
        return TopologyPass(verdict)

    return look


def test_the_formation_steps_are_events_of_the_topology_span_and_still_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporter = recorded_spans(monkeypatch)
    told: list[FormationStep] = []
    steps = (FormationStep.PODS_READY, FormationStep.MET, FormationStep.SLOTS_ASSIGNED, FormationStep.HEALTHY)
    with span("controller.reconcile", root=True):
        found = topology_look(
            SPEC, TopologyOptions(told=told.append), forming(*steps, verdict=TopologyVerdict(True, "ok"))
        )  # type: ignore[arg-type]
    assert found.verdict.healthy
    assert told == list(steps)
    looked, reconcile = exporter.get_finished_spans()
    assert looked.name == "controller.topology"
    assert looked.parent is not None
    assert looked.parent.span_id == reconcile.context.span_id
    assert dict(looked.attributes or {}) == {
        "k8s.namespace.name": "shop",
        "syncer.rediscluster": "sessions",
        "syncer.shards": 2,
        "syncer.result": "healthy",
    }
    assert [(e.name, dict(e.attributes or {})) for e in looked.events] == [
        ("formation", {"syncer.formation_step": s.value}) for s in steps
    ]
    assert looked.status.is_ok


def test_a_failed_look_is_an_error_span_with_its_message(monkeypatch: pytest.MonkeyPatch) -> None:
    exporter = recorded_spans(monkeypatch)
    failed = TopologyVerdict(False, "Redis topology: 10.0.0.7:6379 refused", "TopologyError")
    topology_look(SPEC, TopologyOptions(), forming(FormationStep.PODS_READY, verdict=failed))  # type: ignore[arg-type]
    (looked,) = exporter.get_finished_spans()
    assert (looked.attributes or {})["syncer.result"] == "TopologyError"
    assert not looked.status.is_ok
    assert looked.status.description == "Redis topology: 10.0.0.7:6379 refused"
    # Pods not Ready yet is no failure of the look.
    waiting = TopologyVerdict(False, "waiting for every pod", "PodsNotReady")
    topology_look(SPEC, TopologyOptions(), forming(verdict=waiting))  # type: ignore[arg-type]
    assert exporter.get_finished_spans()[-1].status.is_ok
