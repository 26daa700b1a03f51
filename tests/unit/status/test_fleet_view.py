"""The fleet page's picture, folded from pass events and recorded states."""

from __future__ import annotations

from syncer.config.trace_links import TraceLinks
from syncer.domain.health import Health
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, Suspension, SyncPhase
from syncer.status.fleet_view import (
    PENDING,
    RevisionView,
    fold_event,
    fold_revisions,
    fold_states,
    initial,
    to_json,
)

OLD, NEW = "a" * 40, "b" * 40


def states_of(view_json: dict[str, object]) -> dict[str, str]:
    waves = view_json["waves"]
    assert isinstance(waves, list)
    return {w["name"]: w["state"] for w in waves}


def test_a_rollout_moves_each_wave_through_its_states() -> None:
    view = fold_revisions(initial(["canary", "rest"], ["c1", "c2"]), RevisionView(OLD), None)
    view = fold_event(view, PassEvent(Step.APPLYING, "canary", "c1", NEW))
    assert view.rolling == RevisionView(NEW)
    assert states_of(to_json(view)) == {"canary": "applying", "rest": PENDING}
    assert view.clusters["c1"].phase == "applying"
    assert view.clusters["c1"].revision == NEW
    view = fold_event(
        view, PassEvent(Step.GATE_WAIT, "canary", waiting=Waiting.HEALTH, reason="1 progressing")
    )
    assert view.waves[0].state == "waiting-health"
    assert view.waves[0].waiting == "", "only a held wave names what holds it"
    assert view.waves[0].reason == "1 progressing"
    view = fold_event(view, PassEvent(Step.GATE_WAIT, "canary", waiting=Waiting.BAKE))
    assert view.waves[0].state == "baking"
    view = fold_event(view, PassEvent(Step.GATE_PROCEED, "canary"))
    view = fold_event(view, PassEvent(Step.APPLYING, "rest", "c2", NEW))
    assert states_of(to_json(view)) == {"canary": "passed", "rest": "applying"}
    view = fold_event(view, PassEvent(Step.WINDOW_CLOSED, "rest", "c2", NEW, reason="closed until 02:00"))
    assert (view.waves[1].state, view.waves[1].waiting) == ("held", "window")


def test_a_new_revision_rolling_out_starts_every_wave_pending_again() -> None:
    view = initial(["canary", "rest"], ["c1"])
    view = fold_event(view, PassEvent(Step.APPLYING, "canary", "c1", OLD))
    view = fold_event(view, PassEvent(Step.GATE_HALT, "canary", reason="c1 degraded"))
    assert view.waves[0].state == "failed"
    assert view.waves[0].reason == "c1 degraded"
    view = fold_event(view, PassEvent(Step.APPLYING, "canary", "c1", NEW))
    assert states_of(to_json(view)) == {"canary": "applying", "rest": PENDING}


def test_a_failed_apply_and_a_rollback_show_on_the_cluster_and_its_wave() -> None:
    view = initial(["canary"], ["c1"])
    view = fold_event(view, PassEvent(Step.APPLYING, "canary", "c1", NEW))
    view = fold_event(view, PassEvent(Step.APPLY_FAILED, "canary", "c1", NEW, error="Invalid: spec.shards"))
    view = fold_event(view, PassEvent(Step.GATE_ROLLBACK, "canary", reason="apply failed on c1"))
    view = fold_event(view, PassEvent(Step.ROLLING_BACK, "canary", "c1", OLD))
    assert view.clusters["c1"].last_error == "Invalid: spec.shards"
    assert view.clusters["c1"].phase == "rolling-back"
    assert view.waves[0].state == "rolling-back"
    view = fold_event(view, PassEvent(Step.GATE_PROCEED, "canary", revision=OLD, reason="all healthy"))
    assert view.waves[0].state == "failed", "the rollback's own gate ends the rollback, not the failure"
    assert view.waves[0].reason == f"apply failed on c1 (rolled back to {OLD[:12]})"


def test_a_rollbacks_apply_of_the_older_revision_is_not_a_revision_rolling_out() -> None:
    view = initial(["canary"], ["c1"])
    for event in (
        PassEvent(Step.ROLLOUT_STARTED, "canary", revision=NEW),
        PassEvent(Step.APPLYING, "canary", "c1", NEW),
        PassEvent(Step.GATE_ROLLBACK, "canary", revision=NEW, reason="c1 degraded"),
        PassEvent(Step.ROLLING_BACK, "canary", revision=OLD),
        PassEvent(Step.APPLYING, "canary", "c1", OLD),
    ):
        view = fold_event(view, event)
    assert view.rolling == RevisionView(NEW)
    assert view.waves[0].state == "rolling-back"


def test_health_and_reachability_come_from_the_events_of_a_cluster() -> None:
    view = initial(["all"], ["c1"])
    view = fold_event(view, PassEvent(Step.HEALTH_CHECKED, "all", "c1", health=Health.DEGRADED))
    assert view.clusters["c1"].health == "degraded"
    view = fold_event(view, PassEvent(Step.CLUSTER_UNREACHABLE, "all", "c1", error="connection refused"))
    assert view.clusters["c1"].unreachable == "connection refused"
    assert to_json(view)["clusters"] == [
        {
            "name": "c1",
            "wave": "all",
            "revision": "",
            "short": "",
            "phase": "",
            "health": "degraded",
            "healthDetail": "",
            "reachable": False,
            "unreachable": "connection refused",
            "suspended": "",
            "lastError": "",
            "traceId": "",
            "traceUrl": "",
            "step": "cluster-unreachable",
            "objects": [],
            "history": [],
            "diff": None,
            "verdicts": [],
            "analysis": "",
        }
    ]


def test_recorded_states_fill_the_cells_and_unreachable_clusters_keep_what_they_had() -> None:
    view = initial(["all"], ["c1", "c2", "c3"])
    recorded = ClusterSyncState(
        "c1",
        revision=NEW,
        phase=SyncPhase.HEALTHY,
        wave="all",
        health="healthy",
        inventory=(InventoryEntry("redis.io/v1", "RedisCluster", "shop", "<script>x</script>"),),
    )
    suspended = ClusterSyncState("c3", revision=OLD, suspension=Suspension("incident 7", "ops", 1.0))
    view = fold_states(view, {"c1": recorded, "c3": suspended}, {"c2": "timed out", "c3": "suspended"})
    cells = {c["name"]: c for c in to_json(view)["clusters"]}
    assert cells["c1"]["phase"] == "healthy"
    assert cells["c1"]["reachable"] is True
    assert cells["c1"]["objects"] == [
        {
            "kind": "RedisCluster",
            "namespace": "shop",
            "name": "<script>x</script>",
            "action": "",
            "health": "",
            "healthDetail": "",
        }
    ]
    assert cells["c2"]["unreachable"] == "timed out"
    assert cells["c3"]["suspended"].startswith("suspended by ops at ")
    assert cells["c3"]["reachable"] is True


def test_every_change_raises_the_version() -> None:
    view = initial(["all"], ["c1"])
    versions = [view.version]
    view = fold_event(view, PassEvent(Step.APPLYING, "all", "c1", NEW))
    versions.append(view.version)
    view = fold_states(view, {}, {})
    versions.append(view.version)
    view = fold_revisions(view, RevisionView(NEW, "alice", "bump"), None)
    versions.append(view.version)
    assert versions == sorted(set(versions))
    assert to_json(view)["inForce"] == {"sha": NEW, "short": NEW[:12], "signer": "alice", "subject": "bump"}


def test_a_refused_tip_shows_until_another_revision_rolls_out() -> None:
    view = fold_revisions(initial(["all"], ["c1"]), RevisionView(OLD), None)
    reason = "clusters/c1/rc.yaml:3: metadata.name '<script>' is not a valid name"
    view = fold_event(view, PassEvent(Step.REVISION_REJECTED, revision=NEW, error=reason))
    assert to_json(view)["rejected"] == {"sha": NEW, "short": NEW[:12], "reason": reason}
    assert view.rolling is None
    view = fold_event(view, PassEvent(Step.APPLYING, "all", "c1", OLD))
    assert view.rejected is not None
    third = "c" * 40
    view = fold_event(view, PassEvent(Step.APPLYING, "all", "c1", third))
    assert view.rejected is None


def test_a_clusters_last_trace_is_a_link_by_the_configured_template() -> None:
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    recorded = {"c1": ClusterSyncState("c1", revision=NEW, phase=SyncPhase.HEALTHY, trace_id=trace)}
    links = TraceLinks("http://jaeger.example/trace/{traceId}")
    (cell,) = to_json(fold_states(initial(["all"], ["c1"], links), recorded, {}))["clusters"]
    assert (cell["traceId"], cell["traceUrl"]) == (trace, f"http://jaeger.example/trace/{trace}")
    # Without a template the id is shown alone.
    (cell,) = to_json(fold_states(initial(["all"], ["c1"]), recorded, {}))["clusters"]
    assert (cell["traceId"], cell["traceUrl"]) == (trace, "")
