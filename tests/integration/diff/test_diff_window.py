"""The diff says where a closed maintenance window will hold the sync, on the real 3-cluster fleet: a
deny window over the eu clusters holds eu-1 (``window``) and the rest of its wave behind it, the diff
still lists what each will do and says a change is due, and the sync that follows writes exactly
where the diff showed no hold; once the window no longer applies, the diff holds nothing and the
sync writes everywhere. Namespaces only: healthy once they exist, no controller runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from pathlib import Path

from syncer.config.windows import MaintenanceWindow, WindowKind
from syncer.domain.selectors import LabelSelector
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from tests.integration.conftest import FleetHandle
from tests.integration.diff.test_diff_holds import (
    diff,
    policy,
    pytestmark,
    recorded,
    revisions,
    said_and_done,
    shown,
    sync,
    write,
)
from tests.support.fleet_repo import LABELS, FleetRepo

__all__ = ["pytestmark"]

REGIONS = {n: {**labels, "region": n.split("-")[0]} for n, labels in LABELS.items()}
FREEZE = MaintenanceWindow(
    "freeze",
    WindowKind.DENY,
    "0 0 * * *",
    86400.0,  # the whole day, every day: closed whenever the test runs
    UTC,
    LabelSelector.from_dict({"matchLabels": {"region": "eu"}}),
)


def test_a_closed_window_holds_its_cluster_and_its_wave_in_the_diff_as_in_the_sync(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix, REGIONS)
    assert sync(clients, prefix, write(repo, "r1"), policy()).outcome == str(RolloutOutcome.APPLIED)
    frozen = replace(policy(), windows=(FREEZE,))
    second = write(repo, "r2")

    plan = diff(fleet, prefix, second, frozen)
    assert shown(plan) == {
        "canary": ("", "update"),
        "eu-1": ("window", "update"),
        "us-1": ("wave", "update"),
    }
    assert plan.has_changes, "a change is due: the diff exits 1"
    held = {c.cluster: c.blocked for c in plan.clusters}
    assert "freeze" in held["eu-1"], held
    assert held["us-1"].startswith("its wave waits: eu-1"), held

    before = recorded(clients, prefix)
    synced = sync(clients, prefix, second, frozen)
    assert synced.outcome == str(RolloutOutcome.WAITING)
    said, done = said_and_done(plan, before, synced, recorded(clients, prefix))
    assert done == said == {"canary": (True, "r2"), "eu-1": (False, "r1"), "us-1": (False, "r1")}
    assert revisions(clients, prefix) == {"canary": "r2", "eu-1": "r1", "us-1": "r1"}

    # The window no longer applies: nothing holds in the diff, and the sync writes everywhere.
    opened = diff(fleet, prefix, second, policy())
    assert shown(opened) == {"canary": ("", "unchanged"), "eu-1": ("", "update"), "us-1": ("", "update")}
    before = recorded(clients, prefix)
    synced = sync(clients, prefix, second, policy())
    assert synced.outcome == str(RolloutOutcome.APPLIED)
    said, done = said_and_done(opened, before, synced, recorded(clients, prefix))
    assert done == said == {"canary": (False, "r2"), "eu-1": (True, "r2"), "us-1": (True, "r2")}
    assert revisions(clients, prefix) == dict.fromkeys(clients, "r2")
