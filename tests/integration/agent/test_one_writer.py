"""Where two features meet, one decision in one place, tried with real ``syncer run`` and ``syncer sync
--once`` processes on the real fleet and judged by what the clusters hold and what their apiservers
audited, never by syncer's own logs:

- inside a closed maintenance window no path of a running agent repairs drift (the pass's watch of
  a passed wave, the drift job): a RedisCluster deleted out of band stays deleted there while the
  same deletion outside any window is repaired; an override lets the repair through;
- ``syncer sync --once`` beside a running leader waits for the fleet's Lease and gives up naming the
  holder, writing nothing; once the leader is gone it takes the Lease and its writes carry a newer
  token; without a Lease it is refused by every cluster that records one, and never drops it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from devfleet import audit
from syncer.errors import NotFound
from syncer.kube import ApplyOptions, ClusterClient
from syncer.status.state_store import FENCING_LEASE, FENCING_TOKEN, STATE_CONFIGMAP
from tests.integration.agent.drills import lease_flags, live_version, no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import (
    RC_API,
    ROLLOUT_TIMEOUT,
    TWO_WAVES,
    Rig,
    agents,
    rig,
)
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

FREEZE = {
    "name": "freeze",
    "kind": "deny",
    "schedule": "* * * * *",
    "duration": "2h",
    "clusters": {"matchLabels": {"tier": "prod"}},
}


def _uid(client: ClusterClient, namespace: str) -> str:
    try:
        return str(client.get(RC_API, "RedisCluster", "sessions", namespace)["metadata"]["uid"])
    except NotFound:
        return ""


def _creates(rig: Rig, cluster: str, since: datetime) -> list[audit.AuditedWrite]:
    """The RedisCluster creations the apiserver of ``cluster`` audited in the rig's namespace (a
    server-side apply that creates is a patch answered 201), dry runs left out."""
    return [
        w
        for w in audit.writes(rig.fleet.state, cluster)
        if w.resource == "redisclusters"
        and w.namespace == rig.namespace
        and w.code == 201
        and not w.dry_run
        and w.at >= since
    ]


def _delete_rc(rig: Rig, cluster: str) -> None:
    """Delete the RedisCluster out of band and wait until it is gone (finalizer removed)."""
    client = rig.clients[cluster]
    client.delete(RC_API, "RedisCluster", "sessions", rig.namespace)
    eventually(f"the RedisCluster gone from {cluster}", lambda: _uid(client, rig.namespace) == "", 60)


def test_inside_a_closed_window_no_path_of_a_running_agent_repairs_drift(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        opened = agents.start("open", rig.args("two-waves.yaml", "--no-leader-elect"))
        eventually("every cluster healthy", lambda: rig.all_healthy(revision), ROLLOUT_TIMEOUT)
        opened.kill()

        # A deny window on the prod clusters, active for the whole test; the drift job runs often.
        frozen_policy = write_policy(rig, "frozen.yaml", {**TWO_WAVES, "windows": [FREEZE]})
        args = rig.args(frozen_policy, "--no-leader-elect", "--drift-interval", "2s")
        frozen = agents.start("frozen", args)
        eventually("the frozen agent's first pass", lambda: frozen.said("sync "), 60)
        since = datetime.now(UTC)
        _delete_rc(rig, "eu-1")
        _delete_rc(rig, "canary")
        # The canary is outside every window: its repair shows that passes and drift jobs ran since.
        eventually("the canary repaired", lambda: _uid(rig.clients["canary"], rig.namespace) != "", 60)
        repaired_at = time.monotonic()
        eventually(
            "three more polls and a drift job",
            lambda: time.monotonic() - repaired_at > 7 and frozen.running(),
            30,
        )
        assert live_version(rig.clients["eu-1"], rig.namespace) == "", "repaired inside its window"
        assert _creates(rig, "eu-1", since) == []
        assert len(_creates(rig, "canary", since)) == 1
        state = rig.states()["eu-1"]
        assert state.revision == revision
        assert state.window.startswith("deny window freeze is active"), state.window

        # An operator's override opens the window: the same path repairs it now.
        command = [
            sys.executable,
            "-m",
            "syncer",
            "override-window",
            "--config",
            str(rig.root / "agent.yaml"),
        ]
        command += ["--cluster", "eu-1", "--reason", "restore sessions", "--for", "10m"]
        command += ["--state-namespace", rig.state_namespace]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        eventually("eu-1 repaired under the override", lambda: _uid(rig.clients["eu-1"], rig.namespace), 60)
        assert len(_creates(rig, "eu-1", since)) == 1
        no_traceback(frozen)


def _sync_once(rig: Rig, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "syncer", "sync", "--once", "--config", str(rig.root / "agent.yaml")]
    command += [
        "--rollout-policy",
        str(rig.root / "two-waves.yaml"),
        "--kubeconfig",
        str(rig.fleet.kubeconfig),
    ]
    command += ["--state-namespace", rig.state_namespace, *extra]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=240, check=False, env=os.environ.copy()
    )


def _fence(rig: Rig) -> dict[str, tuple[str, str]]:
    """Each cluster's recorded fencing token and Lease."""
    found = {}
    for name, client in rig.clients.items():
        annotations: dict[str, Any] = (
            client.get("v1", "ConfigMap", STATE_CONFIGMAP, rig.state_namespace)["metadata"].get("annotations")
            or {}
        )
        found[name] = (str(annotations.get(FENCING_TOKEN, "")), str(annotations.get(FENCING_LEASE, "")))
    return found


def _writes_of(rig: Rig, marker: str, since: datetime) -> list[audit.AuditedWrite]:
    return [
        w
        for name in rig.clients
        for w in audit.writes(rig.fleet.state, name)
        if marker in w.user_agent and w.at >= since and not w.dry_run
    ]


@pytest.mark.slow
def test_sync_once_beside_a_running_leader_holds_the_lease_or_writes_nothing(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    lease = lease_flags(rig, "canary")
    lease_name = f"{rig.lease_namespace}/syncer-agent"
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        leader = agents.start("leader", rig.args("two-waves.yaml", *lease))
        holder = eventually("a Lease holder", rig.lease_holder, 30)
        eventually("every cluster healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)
        recorded = _fence(rig)
        assert {lease for _, lease in recorded.values()} == {lease_name}, recorded

        # A second writer while the leader leads: it waits for the Lease, then gives up naming it.
        since = datetime.now(UTC)
        second = rig.commit("sessions cache 7.2.5", "7.2.5")
        refused = _sync_once(rig, *lease[1:], "--lease-wait", "3s")
        assert refused.returncode == 2, refused.stderr
        assert f"is held by {holder}" in " ".join(refused.stderr.split()), refused.stderr
        assert "Traceback" not in refused.stderr
        assert _writes_of(rig, "replica/sync-once", since) == [], "it wrote without the Lease"
        # The leader rolls the new commit out; its token is still what every cluster records.
        eventually("the leader's rollout of the new commit", lambda: rig.all_healthy(second), ROLLOUT_TIMEOUT)
        assert _fence(rig) == recorded

        # Without leader election it is refused by every cluster that records a token, before any
        # write: a cluster already on the revision whose RedisCluster drifted is not repaired either.
        leader.kill()
        since = datetime.now(UTC)
        drifted = {"apiVersion": RC_API, "kind": "RedisCluster"}
        drifted["metadata"] = {"name": "sessions", "namespace": rig.namespace}
        drifted["spec"] = {"rolloutStrategy": {"stepTimeout": "30s"}}  # git says 20s
        rig.clients["eu-1"].apply(drifted, ApplyOptions(field_manager="by-hand", force=True))
        repaired = _sync_once(rig, "--no-leader-elect")
        assert "holds no Lease" in " ".join(repaired.stderr.split()), repaired.stderr
        assert "Traceback" not in repaired.stderr
        objects = [w for w in _writes_of(rig, "replica/sync-once", since) if w.resource != "events"]
        assert objects == [], objects
        assert _fence(rig) == recorded

        since = datetime.now(UTC)
        third = rig.commit("sessions cache 7.2.6", "7.2.6")
        unfenced = _sync_once(rig, "--no-leader-elect")
        assert unfenced.returncode == 1, unfenced.stderr
        assert "holds no Lease" in " ".join(unfenced.stderr.split()), unfenced.stderr
        assert {n: live_version(c, rig.namespace) for n, c in rig.clients.items()} == dict.fromkeys(
            rig.clients, "7.2.5"
        )
        assert _fence(rig) == recorded
        objects = [w for w in _writes_of(rig, "replica/sync-once", since) if w.resource != "events"]
        assert objects == [], objects

        # Once the leader is gone (its Lease expires), it takes the Lease: a newer token, recorded.
        done = _sync_once(rig, *lease[1:], "--lease-wait", "30s")
        assert done.returncode == 0, done.stderr
        assert rig.all_healthy(third)
        after = _fence(rig)
        for name, (token, lease_of) in after.items():
            assert lease_of == lease_name
            assert int(token) > int(recorded[name][0]), (name, token, recorded[name])
        assert _writes_of(rig, "replica/sync-once", since), "the pass's writes are audited as its own"
        no_traceback(leader)
