"""``syncer diff`` shows a revision the sync would refuse because it failed there before, with the
cause and reason, and its exit code is the sync's; once the live state that caused the failure is
gone, it shows the apply again, and the sync does just that.

The failure is real: a Namespace another field manager made first, labelled otherwise than git says,
is a conflict the sync cannot apply over (the ``report`` policy).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from syncer.domain.changeset import FailureCause
from syncer.kube import ApplyOptions
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from tests.integration.diff.sync_kit import Body, Cluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

BY_HAND = "by-hand"


def second(cluster: Cluster) -> str:
    return f"{cluster.namespace}-x"


def namespace(name: str, team: str = "") -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, **({"labels": {"team": team}} if team else {})},
    }


def team(cluster: Cluster) -> tuple[str, tuple[str, ...]]:
    live = cluster.api.get("v1", "Namespace", second(cluster))
    managers = tuple(sorted({m["manager"] for m in live["metadata"].get("managedFields", [])}))
    return live["metadata"]["labels"]["team"], managers


def the_cluster(document: dict[str, object], name: str) -> dict[str, object]:
    [found] = [c for w in document["waves"] for c in w["clusters"] if c["name"] == name]  # type: ignore[attr-defined]
    return found  # type: ignore[no-any-return]


def test_diff_shows_the_refusal_with_its_cause_and_the_apply_once_the_live_cause_is_gone(
    target: Cluster, tmp_path: Path
) -> None:
    first = target.repo(tmp_path / "r1", [namespace(target.namespace)])
    assert target.sync(first, "r1").outcome is RolloutOutcome.APPLIED
    target.api.apply(namespace(second(target), "ops"), ApplyOptions(field_manager=BY_HAND))
    repo = target.repo(tmp_path / "r2", [namespace(target.namespace), namespace(second(target), "git")])
    failed = target.sync(repo, "r2")
    assert failed.outcome is RolloutOutcome.HALTED, failed
    [failure] = StateStore(target.api, target.state_namespace).load().state.failures
    assert failure.cause is FailureCause.LIVE

    # The diff says what the sync now does: nothing, because r2 failed there for a live cause.
    code, out = target.diff(repo)
    cluster = the_cluster(json.loads(out), target.name)
    assert code == 1
    assert cluster["blocked"] is True
    assert str(cluster["blockedReason"]).startswith("refused: failed before (live): apply failed:")
    code, text = target.diff(repo, "text")
    assert code == 1
    assert "BLOCKED, nothing below is applied: refused: failed before (live)" in text
    refused = target.sync(repo, "r2")
    assert refused.outcome is RolloutOutcome.HALTED, refused
    assert refused.message.startswith(f"{target.name}: refused: failed before (live)")
    assert team(target) == ("ops", (BY_HAND,))

    # The other manager's object is removed: the diff shows the create, and the sync makes it.
    target.api.delete("v1", "Namespace", second(target))
    target.wait_gone("Namespace", second(target))
    code, out = target.diff(repo)
    cluster = the_cluster(json.loads(out), target.name)
    assert (code, cluster["blocked"], cluster["summary"]["create"]) == (1, False, 1)  # type: ignore[index]
    assert target.sync(repo, "r2").outcome is RolloutOutcome.APPLIED
    eventually("the Namespace as git says", lambda: team(target)[0] == "git", 10)
