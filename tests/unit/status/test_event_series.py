"""Repeated events fold into one Event's series: when each occurrence is written, and when a series
ends, decided against an in-memory stand-in of the apiserver."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from syncer.errors import NotFound
from syncer.kube.events import EventRecorder, Regarding, SeriesOptions

STATE = Regarding("v1", "ConfigMap", "syncer-state", "syncer-system", "uid-1")


class Events:
    """Only what the recorder asks of a cluster: create and replace Events."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.creates = 0
        self.replaces = 0

    @property
    def cluster(self) -> str:
        return "test"

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        self.creates += 1
        made = copy.deepcopy(dict(body))
        made["metadata"] = {**made["metadata"], "name": f"e{self.creates}", "resourceVersion": "1"}
        self.objects[made["metadata"]["name"]] = made
        return copy.deepcopy(made)

    def replace(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        if name not in self.objects:
            raise NotFound(f"event {name} not found")
        self.replaces += 1
        self.objects[name] = copy.deepcopy(dict(body))
        return copy.deepcopy(self.objects[name])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recorder(events: Events, clock: Clock, max_series: int = 8) -> EventRecorder:
    options = SeriesOptions(heartbeat=300, finish_after=360, max_series=max_series)
    return EventRecorder(events, instance="agent-0", series=options, clock=clock)  # type: ignore[arg-type]


def test_a_poll_every_minute_for_an_hour_is_one_event_written_thirteen_times() -> None:
    events, clock = Events(), Clock()
    rec = recorder(events, clock)
    for _ in range(60):
        assert rec.emit(STATE, "WaveHealthy", "canary: healthy")
        clock.now += 60
    assert events.creates == 1
    # The second occurrence at once, then one heartbeat per five minutes.
    assert events.replaces == 1 + 11
    (event,) = events.objects.values()
    assert 55 <= event["series"]["count"] <= 60
    rec.flush()
    assert event is not events.objects["e1"]
    assert events.objects["e1"]["series"]["count"] == 60


def test_events_that_differ_in_note_reason_type_or_object_are_their_own_series() -> None:
    events, clock = Events(), Clock()
    rec = recorder(events, clock)
    small = recorder(Events(), clock, max_series=3)
    other = Regarding("v1", "ConfigMap", "other", "syncer-system")
    for _ in range(3):
        rec.emit(STATE, "WaveHealthy", "canary: healthy")
        rec.emit(STATE, "WaveHealthy", "eu: healthy")
        rec.emit(STATE, "WaveHealthy", "canary: healthy", warning=True)
        rec.emit(other, "WaveHealthy", "canary: healthy")
    for n in range(5):
        small.emit(STATE, "WaveHealthy", f"wave {n}")
    assert events.creates == 4
    # The third occurrence waits for the heartbeat (or a flush) to be written.
    assert {e["series"]["count"] for e in events.objects.values()} == {2}
    rec.flush()
    assert {e["series"]["count"] for e in events.objects.values()} == {3}
    # What is remembered is bounded: the oldest series is forgotten first.
    assert len(small._series) == 3


def test_a_series_not_seen_for_the_finish_time_ends_with_its_count_and_a_new_event_starts() -> None:
    events, clock = Events(), Clock()
    rec = recorder(events, clock)
    for _ in range(4):
        rec.emit(STATE, "RolloutHalted", "canary: not healthy")
        clock.now += 10
    clock.now += 361
    rec.emit(STATE, "RolloutHalted", "canary: not healthy")
    assert events.creates == 2
    assert events.objects["e1"]["series"]["count"] == 4
    assert "series" not in events.objects["e2"]


def test_an_expired_event_is_created_again_on_its_next_occurrence() -> None:
    events, clock = Events(), Clock()
    rec = recorder(events, clock)
    rec.emit(STATE, "WaveHealthy", "canary: healthy")
    del events.objects["e1"]  # the apiserver's event TTL
    assert rec.emit(STATE, "WaveHealthy", "canary: healthy")
    assert events.creates == 2
    assert "e2" in events.objects
