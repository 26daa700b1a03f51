"""Two rows of the diff checked against what the sync then does on the real fleet: drift by removal
names the manager that wrote last, and an opted-out prune is named, with why, in the sync's log."""

from __future__ import annotations

import json
from pathlib import Path

import jsonpatch
import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain.progress import PassEvent, Step
from syncer.domain.rules import PRUNE_ANNOTATION, PRUNE_DISABLED
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.manifests import load_fleet
from tests.integration.diff.sync_kit import Cluster
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration


def _namespace(name: str, **labels: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels)}}


def _objects(out: str) -> dict[str, dict[str, object]]:
    document = json.loads(out)
    return {o["name"]: o for w in document["waves"] for c in w["clusters"] for o in c["objects"]}


def test_drift_by_removal_names_the_manager_that_wrote_last_and_the_sync_repairs_it(
    target: Cluster, tmp_path: Path
) -> None:
    name = f"{target.namespace}-drift"
    repo = target.repo(tmp_path / "r1", [_namespace(name, team="cache")])
    target.sync(repo, "r1")
    live = target.api.get("v1", "Namespace", name)
    removed = jsonpatch.JsonPatch([{"op": "remove", "path": "/metadata/labels/team"}]).apply(live)
    _replace(target, removed)

    # A removal alone leaves the remover no field to own: the apiserver keeps no entry for it.
    code, out = target.diff(repo)
    row = _objects(out)[name]
    assert row["action"] == "drift", row
    assert "a client the apiserver does not name" in str(row["message"])
    assert code == 1

    # The same edit that also sets a field of its own leaves its manager on record.
    live = target.api.get("v1", "Namespace", name)
    live["metadata"]["labels"]["edited"] = "yes"
    _replace(target, live)
    code, out = target.diff(repo)
    row = _objects(out)[name]
    assert row["action"] == "drift", row
    assert "kubectl-edit, last to write it" in json.dumps(row)

    target.sync(repo, "r1")
    assert target.api.get("v1", "Namespace", name)["metadata"]["labels"]["team"] == "cache"


def _replace(target: Cluster, body: dict[str, object]) -> None:
    """An update by another field manager (as ``kubectl edit`` makes one)."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=target.kubeconfig, context=target.name)
    try:
        client.CoreV1Api(api).replace_namespace(
            str(body["metadata"]["name"]),
            body,
            field_manager="kubectl-edit",  # type: ignore[index]
        )
    finally:
        api.close()


def test_an_opted_out_prune_is_named_with_why_in_the_sync_log(target: Cluster, tmp_path: Path) -> None:
    kept, other = f"{target.namespace}-kept", f"{target.namespace}-other"
    first = target.repo(tmp_path / "r1", [_namespace(kept), _namespace(other)])
    target.sync(first, "r1")
    opt_out = {"metadata": {"annotations": {PRUNE_ANNOTATION: PRUNE_DISABLED}}}
    live = target.api.get("v1", "Namespace", kept)
    live["metadata"].setdefault("annotations", {}).update(opt_out["metadata"]["annotations"])
    _replace(target, live)

    second = target.repo(tmp_path / "r2", [_namespace(other)])
    code, out = target.diff(second)
    row = _objects(out)[kept]
    assert row["action"] == "keep", row
    assert PRUNE_DISABLED in str(row["message"])
    assert code == 0, out

    told: list[PassEvent] = []
    gate = WaveGate(max_concurrent=1, health_timeout=60.0, bake=0.0)
    options = RolloutOptions(
        rollout=RolloutPolicy((WavePolicy("all", 100.0, None, gate),), rollback=False),
        state_namespace=target.state_namespace,
        health_poll=0.5,
    )
    FleetRollout({target.name: target.api}, options, listener=told.append, hooks=UNFENCED_HOOKS).sync(
        load_fleet(second, "r2")
    )
    (applied,) = [e for e in told if e.step is Step.APPLIED]
    assert f"Namespace/{kept}" in applied.detail
    assert PRUNE_DISABLED in applied.detail
    assert target.api.get("v1", "Namespace", kept)["metadata"]["name"] == kept
