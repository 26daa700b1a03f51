"""The notifier's decisions between an event and a receiver's queue: routes by class and severity,
kinds of receiver that have nothing to say, duplicates folded and counted. The couriers (network)
are replaced by recorders; delivery itself is tested against real receivers in the integration tests."""

from __future__ import annotations

import json

from syncer.config.notifications import NotificationConfig, Receiver, ReceiverKind, Route, Secret
from syncer.config.settings import NotifySettings
from syncer.domain.notices import NoticeClass, Severity
from syncer.domain.progress import PassEvent, Step
from syncer.notify.notifier import Notifier
from syncer.notify.payloads import Request


class Recorder:
    def __init__(self) -> None:
        self.posted: list[Request] = []

    def post(self, summary: str, request: Request) -> None:
        self.posted.append(request)


def _notifier(now: list[float]) -> tuple[Notifier, dict[str, Recorder], list[tuple[str, str]]]:
    receivers = {
        "ops": Receiver("ops", ReceiverKind.WEBHOOK, Secret("t", "k"), url="https://hooks.example/in"),
        "chat": Receiver("chat", ReceiverKind.SLACK, Secret("t", "https://chat.example/x")),
        "forge": Receiver(
            "forge", ReceiverKind.COMMIT_STATUS, Secret("t", "tok"), url="https://f.example", repository="a/b"
        ),
    }
    routes = (
        Route(("ops", "forge")),
        Route(("chat",), frozenset({NoticeClass.WAVE_FAILED}), Severity.ERROR),
    )
    config = NotificationConfig(receivers, routes, NotifySettings(fold_window=60, unreachable_after=0))
    counted: list[tuple[str, str]] = []
    notifier = Notifier(config, {}, lambda name, result: counted.append((name, result)), clock=lambda: now[0])
    recorders = {}
    for name, courier in list(notifier.couriers.items()):
        courier.close(1)
        recorders[name] = Recorder()
        notifier.couriers[name] = recorders[name]  # type: ignore[assignment]
    return notifier, recorders, counted


def test_routes_send_each_notice_where_its_class_and_severity_go() -> None:
    notifier, sent, _ = _notifier([0.0])
    notifier(PassEvent(Step.ROLLOUT_STARTED, "canary", revision="a" * 40))
    notifier(PassEvent(Step.GATE_HALT, "eu", revision="a" * 40, reason="eu-1: Stalled"))
    notifier(PassEvent(Step.CLUSTER_UNREACHABLE, cluster="us-1", error="refused"))
    notifier(PassEvent(Step.APPLYING, "canary", "canary", "a" * 40))
    assert [json.loads(r.body)["class"] for r in sent["ops"].posted] == [
        "rollout-started",
        "wave-failed",
        "cluster-unreachable",
    ]
    # The forge has no status to give an unreachable cluster; chat takes failed waves only.
    assert [json.loads(r.body)["state"] for r in sent["forge"].posted] == ["pending", "failure"]
    assert len(sent["chat"].posted) == 1
    assert "wave-failed" in json.loads(sent["chat"].posted[0].body)["text"]


def test_a_flood_of_the_same_failure_is_folded_and_counted_until_the_window_passes() -> None:
    now = [0.0]
    notifier, sent, counted = _notifier(now)
    for second in range(10):
        now[0] = float(second)
        notifier(PassEvent(Step.CLUSTER_UNREACHABLE, cluster="us-1", error="refused"))
    assert len(sent["ops"].posted) == 1
    assert counted.count(("ops", "folded")) == 9
    now[0] = 61.0
    notifier(PassEvent(Step.CLUSTER_UNREACHABLE, cluster="us-1", error="refused"))
    assert len(sent["ops"].posted) == 2
