"""Golden cases of the three-way plan: fixtures/<case>/{desired,live,predicted,expected}.yaml.

``desired.yaml`` holds the manifests, ``live.yaml`` the live objects (with managedFields),
``predicted.yaml`` the server's dry-run answers for the objects the plan asks about, and
``expected.yaml`` the dry-runs the plan must ask for and the objects of the cluster's JSON document.
Set SYNCER_REGOLD=1 to rewrite ``expected.yaml`` after a deliberate change, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.domain import MANAGED_BY_LABEL, Inventory, Manifest, ObjectKey, api_group
from syncer.errors import Location
from syncer.plan import ClusterState, Prediction, cluster_document, dry_runs_needed, plan_cluster

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER = "c1"


def _docs(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def key_of(body: dict[str, Any]) -> ObjectKey:
    meta = body["metadata"]
    return ObjectKey(
        CLUSTER, api_group(body["apiVersion"]), body["kind"], meta.get("namespace", ""), meta["name"]
    )


def load_case(case: Path) -> tuple[ClusterState, dict[ObjectKey, dict[str, Any]]]:
    desired = tuple(
        Manifest(key_of(b), b["apiVersion"], b, Location(f"{case.name}/desired.yaml"))
        for b in _docs(case / "desired.yaml")
    )
    live = {key_of(b): b for b in _docs(case / "live.yaml")}
    ours = [k for k, b in live.items() if b["metadata"].get("labels", {}).get(MANAGED_BY_LABEL) == "syncer"]
    state = ClusterState(CLUSTER, desired, live, Inventory.of(CLUSTER, ours))
    return state, {key_of(b): b for b in _docs(case / "predicted.yaml")}


CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES)
def test_golden_plan(case: str) -> None:
    state, predicted = load_case(FIXTURES / case)
    needed = dry_runs_needed(state)
    predictions = {r.key: Prediction(r.key, predicted=predicted.get(r.key, r.body)) for r in needed}
    got = {
        "dryRuns": [r.key.subject for r in needed],
        "objects": cluster_document(plan_cluster(state, predictions))["objects"],
    }
    expected_file = FIXTURES / case / "expected.yaml"
    if os.environ.get("SYNCER_REGOLD"):
        expected_file.write_text(yaml.safe_dump(got, sort_keys=False))
    assert got == yaml.safe_load(expected_file.read_text())


def test_every_case_has_an_expectation_and_every_action_is_covered() -> None:
    seen = set()
    for case in CASES:
        expected = yaml.safe_load((FIXTURES / case / "expected.yaml").read_text())
        seen |= {o["action"] for o in expected["objects"]}
    assert seen == {"create", "update", "adopt", "prune", "keep", "unchanged", "conflict", "drift"}
