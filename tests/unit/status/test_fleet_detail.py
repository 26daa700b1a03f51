"""A cluster's detail on the fleet page: its recorded history, its objects with the action of the
last apply and their health, the last change set with masked field values, and the analysis and
guard verdicts that concern it, folded from pass events and results."""

from __future__ import annotations

from syncer.domain.analysis import AnalysisVerdict, Measurement, MeasurementOutcome
from syncer.domain.changeset import ChangeEntry, ChangeSet, EntryOutcome
from syncer.domain.health import Health, ObjectHealth
from syncer.domain.objects import ObjectKey
from syncer.domain.plans import Action
from syncer.domain.progress import PassEvent, Step
from syncer.domain.revision_history import HistoryEntry
from syncer.domain.revision_history import Outcome as Ran
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, SyncPhase
from syncer.errors import GuardFailure, GuardRejected
from syncer.plan.report import FieldList
from syncer.status.fleet_detail import FIELDS_SHOWN, VALUE_SHOWN
from syncer.status.fleet_view import fold_event, fold_states, initial, to_json

OLD, NEW = "a" * 40, "b" * 40
RC = "redis.syncer.dev/v1alpha1"


def key(name: str, kind: str = "RedisCluster", namespace: str = "shop") -> ObjectKey:
    return ObjectKey("c1", "redis.syncer.dev", kind, namespace, name)


def cell(view_json: dict[str, object], name: str = "c1") -> dict[str, object]:
    clusters = view_json["clusters"]
    assert isinstance(clusters, list)
    return next(c for c in clusters if c["name"] == name)


def state(revision: str = NEW) -> ClusterSyncState:
    inventory = (
        InventoryEntry("v1", "Namespace", "", "shop"),
        InventoryEntry(RC, "RedisCluster", "shop", "orders"),
        InventoryEntry(RC, "RedisCluster", "shop", "sessions"),
    )
    return ClusterSyncState("c1", revision, SyncPhase.HEALTHY, "all", inventory, health="healthy")


def test_the_detail_shows_the_history_the_cluster_records() -> None:
    history = (
        HistoryEntry(OLD, "ops", 1_700_000_000.0, 1_700_000_060.0, "all", Ran.HEALTHY, "", "agent r1"),
        HistoryEntry(NEW, "ops", 1_700_000_100.0, 0.0, "all", Ran.APPLYING, "", "agent r1"),
    )
    view = fold_states(initial(["all"], ["c1"]), {"c1": state()}, {}, {"c1": history})
    rows = cell(to_json(view))["history"]
    assert rows == [
        {
            "revision": OLD,
            "short": OLD[:12],
            "signer": "ops",
            "started": "2023-11-14 22:13:20 UTC",
            "ended": "2023-11-14 22:14:20 UTC",
            "wave": "all",
            "outcome": "healthy",
            "reason": "",
            "by": "agent r1",
        },
        {
            "revision": NEW,
            "short": NEW[:12],
            "signer": "ops",
            "started": "2023-11-14 22:15:00 UTC",
            "ended": "",
            "wave": "all",
            "outcome": "applying",
            "reason": "",
            "by": "agent r1",
        },
    ]
    # A pass that could not give the history (an unreadable record) leaves the one shown.
    view = fold_states(view, {"c1": state()}, {}, {})
    assert len(cell(to_json(view))["history"]) == 2


def test_objects_show_the_action_of_the_last_apply_and_their_health() -> None:
    fields = FieldList("RedisCluster")
    fields.add(("spec", "version"), ("7.2.4", "7.2.5"), ("syncer",), Action.UPDATE)
    fields.add(
        ("spec", "redisConfig", "requirepass"), ("old-secret", "new-secret"), ("syncer",), Action.UPDATE
    )
    changes = ChangeSet(
        "c1",
        NEW,
        (
            ChangeEntry(key("orders"), Action.UPDATE, EntryOutcome.APPLIED, fields=fields.done()),
            ChangeEntry(key("sessions"), Action.CREATE, EntryOutcome.APPLIED),
        ),
    )
    view = initial(["all"], ["c1"])
    view = fold_event(view, PassEvent(Step.APPLYING, "all", "c1", NEW))
    view = fold_event(view, PassEvent(Step.APPLIED, "all", "c1", NEW, objects=2, changes=changes))
    judged = (
        ObjectHealth("RedisCluster/shop/orders", Health.PROGRESSING, "Reconciling", "2 of 3 shards ready"),
        ObjectHealth("RedisCluster/shop/sessions", Health.HEALTHY, "Ready"),
    )
    view = fold_event(
        view, PassEvent(Step.HEALTH_CHECKED, cluster="c1", health=Health.PROGRESSING, objects_health=judged)
    )
    view = fold_states(view, {"c1": state()}, {})
    shown = cell(to_json(view))
    assert [(o["name"], o["action"], o["health"], o["healthDetail"]) for o in shown["objects"]] == [
        ("shop", "unchanged", "", ""),
        ("orders", "update", "progressing", "Reconciling 2 of 3 shards ready"),
        ("sessions", "create", "healthy", "Ready"),
    ]
    diff = shown["diff"]
    assert diff["revision"] == NEW
    assert [(e["subject"], e["action"], e["outcome"]) for e in diff["entries"]] == [
        ("RedisCluster/shop/orders", "update", "applied"),
        ("RedisCluster/shop/sessions", "create", "applied"),
    ]
    orders = diff["entries"][0]["fields"]
    assert orders[1] == {"path": "/spec/version", "before": "7.2.4", "after": "7.2.5", "masked": False}
    # The secret is masked as syncer diff masks it: never its value, a digest that shows it changed.
    assert orders[0]["path"] == "/spec/redisConfig/requirepass"
    assert orders[0]["masked"] is True
    assert orders[0]["before"].startswith("<masked sha256:")
    assert orders[0]["before"] != orders[0]["after"]
    assert "secret" not in str(shown)
    # A create lists no fields: the whole object is new.
    assert diff["entries"][1]["fields"] == []


def test_a_new_revision_makes_the_action_unknown_until_its_apply_is_told() -> None:
    changes = ChangeSet("c1", OLD, (ChangeEntry(key("orders"), Action.CREATE, EntryOutcome.APPLIED),))
    view = fold_event(initial(["all"], ["c1"]), PassEvent(Step.APPLIED, "all", "c1", OLD, changes=changes))
    view = fold_states(view, {"c1": state(NEW)}, {})
    assert {o["action"] for o in cell(to_json(view))["objects"]} == {""}


def test_long_field_values_and_many_fields_are_cut() -> None:
    fields = FieldList("RedisCluster")
    for i in range(FIELDS_SHOWN + 3):
        fields.add(("metadata", "labels", f"l{i:02d}"), ("x", "y" * 1000), (), Action.UPDATE)
    changes = ChangeSet(
        "c1", NEW, (ChangeEntry(key("orders"), Action.UPDATE, EntryOutcome.APPLIED, fields=fields.done()),)
    )
    view = fold_event(initial(["all"], ["c1"]), PassEvent(Step.APPLIED, "all", "c1", NEW, changes=changes))
    entry = cell(to_json(view))["diff"]["entries"][0]
    assert len(entry["fields"]) == FIELDS_SHOWN
    assert entry["moreFields"] == 3
    assert len(entry["fields"][0]["after"]) == VALUE_SHOWN


def measured(metric: str, value: float, outcome: MeasurementOutcome, verdict: AnalysisVerdict) -> PassEvent:
    m = Measurement(metric, value, "result < 0.01", outcome, verdict, f"{value} against result < 0.01")
    return PassEvent(Step.ANALYSIS_MEASURED, "canary", "c1", NEW, measurement=m)


def test_analysis_verdicts_show_each_metrics_last_measurement_of_the_revision() -> None:
    view = fold_event(initial(["canary"], ["c1"]), PassEvent(Step.APPLYING, "canary", "c1", NEW))
    view = fold_event(
        view, measured("error-rate", 0.002, MeasurementOutcome.SUCCESS, AnalysisVerdict.RUNNING)
    )
    view = fold_event(view, measured("latency", 3.5, MeasurementOutcome.SUCCESS, AnalysisVerdict.RUNNING))
    view = fold_event(view, measured("error-rate", 0.05, MeasurementOutcome.FAILURE, AnalysisVerdict.FAILED))
    verdicts = cell(to_json(view))["verdicts"]
    assert [
        (v["kind"], v["name"], v["verdict"], v["outcome"], v["value"], v["threshold"]) for v in verdicts
    ] == [
        ("analysis", "latency", "running", "success", "3.5", "result < 0.01"),
        ("analysis", "error-rate", "failed", "failure", "0.05", "result < 0.01"),
    ]
    # The next revision's analysis starts again.
    view = fold_event(view, PassEvent(Step.APPLYING, "canary", "c1", "c" * 40))
    assert cell(to_json(view))["verdicts"] == []


def test_the_recorded_analysis_counts_of_the_revision_run_are_shown() -> None:
    from syncer.domain.analysis import AnalysisRecord, MetricCounts

    record = AnalysisRecord(
        NEW, 1.0, (MetricCounts("error-rate", taken=3, successes=2, failures=1, last_value=0.02),)
    )
    recorded = ClusterSyncState("c1", NEW, SyncPhase.APPLIED, "all", analysis=record)
    view = fold_states(initial(["all"], ["c1"]), {"c1": recorded}, {})
    assert cell(to_json(view))["analysis"] == record.summary()
    stale = ClusterSyncState("c1", OLD, SyncPhase.APPLIED, "all", analysis=record)
    assert cell(to_json(fold_states(view, {"c1": stale}, {})))["analysis"] == ""


def test_guard_verdicts_of_a_refused_tip_show_on_the_clusters_they_concern() -> None:
    failures = (
        GuardFailure("no-redis-downgrade", "c1", "fail", "rule no-redis-downgrade failed on c1 ..."),
        GuardFailure("max-clusters", "", "fail", "limit max-clusters failed: 3 clusters > 2"),
        GuardFailure("shards-one-step", "c2", "error", "rule shards-one-step errored on c2 ..."),
    )
    error = GuardRejected("guard policy guards.yaml", verdicts=failures)
    view = initial(["all"], ["c1", "c2"])
    view = fold_event(view, PassEvent(Step.REVISION_REJECTED, revision=NEW, error=str(error), cause=error))
    shown = to_json(view)
    assert [(v["kind"], v["name"], v["verdict"]) for v in cell(shown, "c1")["verdicts"]] == [
        ("guard", "no-redis-downgrade", "fail"),
        ("guard", "max-clusters", "fail"),
    ]
    assert [v["name"] for v in cell(shown, "c2")["verdicts"]] == ["max-clusters", "shards-one-step"]
    # Once another revision rolls out, the refusal and its verdicts are gone.
    view = fold_event(view, PassEvent(Step.APPLYING, "all", "c1", "c" * 40))
    assert cell(to_json(view), "c1")["verdicts"] == []
