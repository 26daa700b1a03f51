"""A real ``syncer run`` process counts the applies a cluster refuses in ``syncer_apply_errors_total``
(the metric the chart's SyncerApplyErrors alert reads), for that cluster alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from syncer.controller.model import GROUP
from syncer.kube import ClusterClient
from tests.integration.agent.drills import (
    FAST,
    RBAC,
    binding,
    commit_per_cluster,
    no_traceback,
    own_identity,
    remove,
    write_policy,
)
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import LABELS, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

ERRORS = "syncer_apply_errors_total"


def all_but_rediscluster_writes(client: ClusterClient, name: str) -> dict[str, Any]:
    """A ClusterRole allowing everything the cluster serves except writing RedisClusters, which may
    only be read (RBAC only adds rights: every other API group whole, the RedisClusters' read-only)."""
    groups = [g["name"] for g in json.loads(client.get_text("/apis"))["groups"] if g["name"] != GROUP]
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [
            {"apiGroups": ["", *groups], "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": [GROUP], "resources": ["*"], "verbs": ["get", "list", "watch"]},
        ],
    }


def test_applies_a_cluster_refuses_are_counted_for_that_cluster(rig: Rig, agents: Agents) -> None:
    canary = rig.clients["canary"]
    user = own_identity(rig, "canary")
    role = all_but_rediscluster_writes(canary, f"{user}-all-but-rediscluster-writes")
    narrowed = binding(user, role["metadata"]["name"])
    canary.apply(role)
    canary.apply(narrowed)
    policy = write_policy(rig, "fast.yaml", FAST)
    try:
        with agents.shown_on_failure():
            commit_per_cluster(rig, "sessions cache", dict.fromkeys(LABELS, "7.2.4"))
            proc = agents.start("agent", rig.args(policy, "--no-leader-elect"))

            def counted() -> dict[str, float] | None:
                found = {k: v for k, v in proc.metrics().items() if k.startswith(ERRORS)}
                return found or None

            errors = eventually("the refused apply counted", counted, 120)
            assert errors[f'{ERRORS}{{cluster="canary"}}'] >= 1, errors
            assert set(errors) == {f'{ERRORS}{{cluster="canary"}}'}, "only canary refused an apply"
            failed = proc.steps("apply-failed")
            assert {r.get("cluster") for r in failed} == {"canary"}, failed
            assert all("forbidden" in str(r.get("detail", "")).lower() for r in failed), failed
            assert proc.running()
            no_traceback(proc)
    finally:
        remove(canary, narrowed, role)
