"""``syncer diff`` shows the refusal of the cluster's admission policy (the chart's
ValidatingAdmissionPolicy) exactly as the sync then meets it: a Redis downgrade the policy refuses is
an error of the diff (its dry-run apply goes through admission), and the sync writes nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from syncer.errors import NotFound
from syncer.kube import ApplyOptions
from syncer.rollout.moves import RolloutOutcome
from tests.integration.chart.kit import agent_values, render
from tests.integration.diff.conftest import seed
from tests.integration.diff.sync_kit import Cluster, rc
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


@pytest.fixture
def policy(target: Cluster, tmp_path: Path) -> Iterator[None]:
    """The chart's admission policy, bound to the test's namespace only."""
    values = agent_values(controller={"watchNamespace": target.namespace})
    objects = render(tmp_path / "chart", values, release=f"adm-{target.namespace[-8:]}")
    chosen = [o for o in objects if o["kind"] in POLICY_KINDS]
    assert len(chosen) == 2
    for obj in chosen:
        target.api.apply(obj, ApplyOptions(field_manager="chart"))
    try:
        yield
    finally:
        for obj in reversed(chosen):
            with contextlib.suppress(NotFound):
                target.api.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])


def test_diff_shows_the_policy_refusing_a_downgrade_and_the_sync_meets_the_same(
    target: Cluster, policy: None, tmp_path: Path
) -> None:
    ns = target.namespace
    seed(target.api, [rc(ns, "cache", version="7.2.4")])
    refusal = (
        "spec.version 6.0 is a downgrade from 7.2.4: a Redis server may not load the data files of a"
        ' newer one; to downgrade anyway, set the annotation redis.syncer.dev/allow-downgrade-to: "6.0"'
    )
    repo = target.repo(tmp_path / "r2", [rc(ns, "cache", version="6.0")])

    def diff_refuses() -> bool:
        code, out = target.diff(repo)
        return code == 2 and any(refusal in e for e in json.loads(out)["errors"])

    # The policy takes a moment to be loaded by the apiserver.
    eventually("the diff to show the policy's refusal", diff_refuses, 30, every=0.5)
    code, text = target.diff(repo, "text")
    assert code == 2
    assert refusal in text

    report = target.sync(repo, "r2")
    assert report.outcome is not RolloutOutcome.APPLIED, report
    [change_set] = report.waves[0].change_sets
    assert change_set.writes == 0
    assert refusal in change_set.error, change_set.error
    assert target.api.get(rc(ns, "cache")["apiVersion"], "RedisCluster", "cache", ns)["spec"]["version"] == (
        "7.2.4"
    )

    # With the annotation naming the version, the diff shows the update and the sync makes it.
    allowed = rc(ns, "cache", version="6.0")
    allowed["metadata"]["annotations"] = {"redis.syncer.dev/allow-downgrade-to": "6.0"}
    repo = target.repo(tmp_path / "r3", [allowed])
    code, out = target.diff(repo)
    assert code == 1, out
    assert json.loads(out)["errors"] == []
