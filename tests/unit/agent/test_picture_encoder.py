"""The page's JSON as a stream sends it: the same as the picture's JSON, each cluster's part encoded
again only when its cell changed (or the guard failures it shows did)."""

from __future__ import annotations

import json

import pytest

from syncer.agent import ui
from syncer.agent.ui import PictureEncoder
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.errors import GuardFailure, GuardRejected
from syncer.status.fleet_view import FleetView, fold_event, fold_states, initial, to_json

NEW = "b" * 40


def test_each_encoding_is_the_pictures_json_and_only_changed_cells_are_encoded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[str] = []
    original = ui.cluster_json

    def counting(cell, guards):  # type: ignore[no-untyped-def]
        encoded.append(cell.name)
        return original(cell, guards)

    monkeypatch.setattr(ui, "cluster_json", counting)
    encoder = PictureEncoder()

    def check(view: FleetView) -> list[str]:
        encoded.clear()
        assert json.loads(encoder.encode(view)) == to_json(view)
        return sorted(encoded)

    view = initial(["canary", "rest"], ["c1", "c2", "<c3>"])
    assert check(view) == ["<c3>", "c1", "c2"]
    view = fold_event(view, PassEvent(Step.APPLYING, "canary", "c1", NEW))
    assert check(view) == ["c1"]
    assert check(view) == []
    failure = GuardFailure("no-redis-downgrade", "c2", "fail", "rule no-redis-downgrade failed on c2")
    error = GuardRejected("guards", verdicts=[failure])
    view = fold_event(view, PassEvent(Step.REVISION_REJECTED, revision="c" * 40, error="guards", cause=error))
    assert check(view) == ["<c3>", "c1", "c2"]
    view = fold_states(view, {"c2": ClusterSyncState("c2", NEW, SyncPhase.HEALTHY, "rest")}, {})
    assert check(view) == ["c2"]
