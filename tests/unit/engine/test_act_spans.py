"""Each person's act a cluster records is an event ``syncer.act`` of the pass that reads it, with the
act's kind, who, the revision and why, once per act (a later pass reading it again adds nothing).
In-memory clusters; spans recorded in memory."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from syncer.domain.gates import Abort, PromotedBy, Promotion
from syncer.domain.person_acts import acts_of
from syncer.domain.sync_state import ClusterSyncState, Pin, RetryRequest, Suspension
from syncer.status.acts import PIN_KEY, RETRY_KEY, SUSPENSION_KEY
from syncer.status.state_store import STATE_CONFIGMAP
from tests.support.spans import recorded_spans
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet


def record(rig: Rig, cluster: str, key: str, value: object) -> None:
    """A person's act written beside the cluster's state, as the CLI's server-side apply merges it."""
    configmap = rig.clusters[cluster].objects.setdefault(
        ("v1", "ConfigMap", STATE_NAMESPACE, STATE_CONFIGMAP),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": STATE_CONFIGMAP, "namespace": STATE_NAMESPACE},
        },
    )
    configmap.setdefault("data", {})[key] = json.dumps(asdict(value))  # type: ignore[call-overload]


def acts_of_passes(exporter: object) -> list[list[dict[str, object]]]:
    """Each ended pass's ``syncer.act`` events' attributes, in order."""
    passes = [s for s in exporter.get_finished_spans() if s.name == "syncer.pass"]  # type: ignore[attr-defined]
    return [[dict(e.attributes) for e in p.events if e.name == "syncer.act"] for p in passes]


def test_each_act_is_an_event_of_the_pass_that_first_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    exporter = recorded_spans(monkeypatch)
    rig = Rig()
    rig.revisions.push(fleet("rev-0"))
    record(rig, "eu-1", SUSPENSION_KEY, Suspension("incident 42", "alice", 1.8e9))
    rig.run()
    rig.revisions.push(fleet("rev-1"))
    record(rig, "eu-1", SUSPENSION_KEY, Suspension("", "bob", 1.8e9 + 60, resumed="over"))
    record(rig, "us-1", PIN_KEY, Pin("rev-0", "carol", "bad canary", 1.8e9 + 30))
    record(rig, "canary", RETRY_KEY, RetryRequest("rev-1", "dave", "flaky", 1.8e9 + 90))
    rig.run()
    rig.run()  # nothing new to read
    first, second, third = acts_of_passes(exporter)
    assert first == [
        {
            "syncer.act.kind": "suspend",
            "syncer.act.by": "alice",
            "syncer.cluster": "eu-1",
            "syncer.act.reason": "incident 42",
            "syncer.act.at": 1.8e9,
        }
    ]
    assert [
        (a["syncer.act.kind"], a["syncer.act.by"], a["syncer.cluster"], a.get("syncer.revision"))
        for a in second
    ] == [
        ("rollback", "carol", "us-1", "rev-0"),
        ("resume", "bob", "eu-1", None),
        ("retry", "dave", "canary", "rev-1"),
    ]
    assert second[1]["syncer.act.reason"] == "over"
    assert third == []


def test_promotes_and_an_abort_are_acts_with_who_and_the_revision() -> None:
    state = ClusterSyncState(
        "canary",
        promotion=Promotion(
            "rest", "rev-1", (PromotedBy("alice", 1.0, "looks good"), PromotedBy("bob", 2.0))
        ),
        abort=Abort("rev-2", "carol", "errors up", 3.0),
    )
    assert [(a.kind, a.by, a.revision, a.wave, a.reason) for a in acts_of(state)] == [
        ("promote", "alice", "rev-1", "rest", "looks good"),
        ("promote", "bob", "rev-1", "rest", ""),
        ("abort", "carol", "rev-2", "", "errors up"),
    ]
    assert acts_of(ClusterSyncState("canary")) == ()
