"""Events on a real apiserver, as `kubectl events` users would find them."""

from __future__ import annotations

from pathlib import Path

import pytest

from devfleet import access
from syncer.kube import ClusterClient
from syncer.kube.events import EventRecorder, Regarding
from tests.integration.conftest import FleetHandle

pytestmark = pytest.mark.integration


def test_an_event_regarding_an_object_is_listed_with_it(kube: ClusterClient, namespace: str) -> None:
    configmap = kube.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "state", "namespace": namespace}}
    )
    recorder = EventRecorder(kube, instance="agent-0")
    assert recorder.emit(
        Regarding.of(configmap), "RolloutHalted", "canary: not healthy 600s after apply", warning=True
    )
    events = kube.list("events.k8s.io/v1", "Event", namespace=namespace).items
    ours = [e for e in events if e["reason"] == "RolloutHalted"]
    assert len(ours) == 1
    event = ours[0]
    assert event["type"] == "Warning"
    assert event["note"] == "canary: not healthy 600s after apply"
    assert event["regarding"]["uid"] == configmap["metadata"]["uid"]
    assert event["reportingController"] == "syncer.dev/agent"
    assert event["reportingInstance"] == "agent-0"


def test_an_event_that_cannot_be_written_is_dropped_not_raised(
    fleet: FleetHandle, cluster: str, namespace: str, tmp_path: Path
) -> None:
    path = access.user_kubeconfig(fleet.state, cluster, "mute", (), tmp_path / "mute.kubeconfig")
    client = ClusterClient.from_kubeconfig(str(path), cluster)
    try:
        recorder = EventRecorder(client)
        assert not recorder.emit(Regarding("v1", "ConfigMap", "x", namespace), "Tried", "no rights")
        assert recorder.dropped == 1
    finally:
        client.close()


def test_a_repeated_event_is_one_event_whose_series_counts_the_repeats(
    kube: ClusterClient, namespace: str
) -> None:
    configmap = kube.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "state", "namespace": namespace}}
    )
    recorder = EventRecorder(kube, instance="agent-0")
    for _ in range(30):
        assert recorder.emit(Regarding.of(configmap), "WaveHealthy", "canary: healthy")
    assert recorder.emit(Regarding.of(configmap), "WaveHealthy", "eu: healthy")

    def ours() -> list[dict[str, object]]:
        events = kube.list("events.k8s.io/v1", "Event", namespace=namespace).items
        return sorted((e for e in events if e["reason"] == "WaveHealthy"), key=lambda e: str(e["note"]))

    canary, eu = ours()
    # The first repeat is written at once, the rest wait for the heartbeat or a flush.
    assert canary["note"] == "canary: healthy"
    assert canary["series"]["count"] == 2
    assert "series" not in eu
    recorder.flush()
    canary, eu = ours()
    assert canary["series"]["count"] == 30
    assert canary["series"]["lastObservedTime"] >= canary["eventTime"]
    assert recorder.written == 4
    # An Event that expired (or was deleted) is noticed at the next write of its series and created
    # again on the occurrence after.
    kube.delete("events.k8s.io/v1", "Event", canary["metadata"]["name"], namespace)
    assert recorder.emit(Regarding.of(configmap), "WaveHealthy", "canary: healthy")
    recorder.flush()
    assert recorder.emit(Regarding.of(configmap), "WaveHealthy", "canary: healthy")
    again = [e for e in ours() if e["note"] == "canary: healthy"]
    assert len(again) == 1
    assert "series" not in again[0]
