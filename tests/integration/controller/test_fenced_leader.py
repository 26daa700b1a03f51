"""A controller leader frozen (SIGSTOP) mid-migration past its Lease and resumed acts no more: the
apiserver's audit log shows no write by it after another replica took the Lease over, and the
redis-servers' own command statistics show no command from it.

Two ``syncer controller`` processes elect a leader with a short Lease; the servers are real
redis-servers behind the pods of the loopback fleet, whose apiserver audits every write. While the
old leader runs again, the new one is frozen and the test's client has stopped, so every command the
servers count in that window can only be the old leader's. The next leader finishes the migration
with every key kept."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from devfleet import audit
from devfleet import fleet as devfleet
from syncer.controller.model import API_VERSION, CONTROLLER_LEASE, FIELD_MANAGER, KIND, ControllerOptions
from syncer.controller.reconciler import Reconciler
from syncer.errors import Conflict
from syncer.kube import ApplyOptions, ClusterClient, KubeApi, KubeObject
from syncer.leader.election import LEASE_API
from tests.integration.controller.rediskit import (
    LOOPBACK_CLUSTER,
    NAME,
    Scene,
    SceneStarter,
    controller_process,
)
from tests.integration.topology.servers import client
from tests.integration.topology.traffic import Traffic
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

DURATION, RENEW_DEADLINE, RETRY = 4.0, 3.0, 0.5
LEASE = (
    "--lease-namespace", "{namespace}", "--lease-duration", str(DURATION),
    "--lease-renew-deadline", str(RENEW_DEADLINE), "--lease-retry-period", str(RETRY),
)  # fmt: skip


def identity(process: subprocess.Popen[bytes]) -> str:
    """The Lease identity ``syncer controller`` gives itself (host name and process id)."""
    return f"{os.uname().nodename}-{process.pid}"


def holder(s: Scene) -> str:
    lease = s.kube.get(LEASE_API, "Lease", CONTROLLER_LEASE.name, s.namespace)
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def open_slots(s: Scene) -> list[int]:
    return sorted({slot for e in s.myselves() for slot, _ in (*e.migrating, *e.importing)})


def command_counts(connections: dict[str, redis.Redis]) -> dict[str, dict[str, int]]:
    """``INFO commandstats`` of each server: command -> calls."""
    found: dict[str, dict[str, int]] = {}
    for name, conn in connections.items():
        stats = conn.info("commandstats")
        found[name] = {command: int(values["calls"]) for command, values in stats.items()}
    return found


def new_commands(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, int]:
    """Commands the servers ran between the two counts, but the one INFO of the first count."""
    grown: dict[str, int] = {}
    for server, counts in after.items():
        for command, calls in counts.items():
            more = calls - before[server].get(command, 0) - (command == "cmdstat_info")
            if more:
                grown[f"{server} {command}"] = more
    return grown


def quiet(connections: dict[str, redis.Redis]) -> dict[str, dict[str, int]]:
    """The command counts once the servers have finished what was sent before both controllers
    froze (a pipeline of MIGRATEs already sent is still being run)."""
    counts = [command_counts(connections)]
    changed = [time.monotonic()]

    def settled() -> bool:
        counts.append(command_counts(connections))
        if new_commands(counts[-2], counts[-1]):
            changed.append(time.monotonic())
        return time.monotonic() - changed[-1] >= 1.0

    eventually("the servers to finish the commands sent before the freeze", settled, 30, every=0.5)
    return counts[-1]


@pytest.mark.timeout(900)
def test_a_leader_frozen_past_its_lease_writes_and_commands_nothing_more(
    loopback_fleet: devfleet.Fleet, tmp_path: Path, redis_scene: SceneStarter
) -> None:
    with redis_scene(persistence=False, controller=False) as s:
        lease = [arg.format(namespace=s.namespace) for arg in LEASE]
        log = tmp_path / "controllers.log"
        with controller_process(loopback_fleet, s.namespace, log, lease) as first:
            s.apply(shards=3, replicasPerShard=0)
            s.wait_ready()
            assert holder(s) == identity(first)
            with controller_process(loopback_fleet, s.namespace, log, lease) as second:
                # Keys to move, so the migration lasts; no client writes while the servers are counted.
                keys = Traffic(s.nodes(), bulk=60000)
                keys.preload()
                s.apply(shards=4)

                def frozen_mid_slot() -> bool:
                    if not open_slots(s):
                        return False
                    first.send_signal(signal.SIGSTOP)
                    if open_slots(s):
                        return True
                    first.send_signal(signal.SIGCONT)
                    return False

                eventually("the leader frozen with a slot open", frozen_mid_slot, 120, every=0.01)
                eventually("the standby to take the Lease over", lambda: holder(s) == identity(second), 30)
                lost = datetime.now(UTC)
                # From here on, only the old leader may talk to the servers.
                second.send_signal(signal.SIGSTOP)
                connections = {str(node): client(node) for node in s.nodes()}
                try:
                    before = quiet(connections)
                    first.send_signal(signal.SIGCONT)
                    try:
                        first.wait(30)
                    except subprocess.TimeoutExpired:
                        first.kill()
                    after = command_counts(connections)
                finally:
                    for conn in connections.values():
                        conn.close()
                second.send_signal(signal.SIGCONT)

                assert new_commands(before, after) == {}, "the deposed leader sent Redis commands"
                agent = f"{FIELD_MANAGER}/{identity(first)}"
                audited = audit.writes(loopback_fleet, LOOPBACK_CLUSTER)
                writes = [w for w in audited if w.user_agent == agent]
                assert any(w.at < lost for w in writes), "the leader's writes are not in the audit log"
                late = [f"{w.verb} {w.resource}/{w.subresource} {w.name}" for w in writes if w.at > lost]
                assert late == [], f"the deposed leader wrote after losing its Lease: {late}"

            # A replica that finds itself fenced out steps down; the next leader finishes the work.
            with controller_process(loopback_fleet, s.namespace, log, lease):
                s.wait_ready()
                assert not open_slots(s)
                assert keys.stop(s.nodes()).lost == ()
                s.kube.delete("redis.syncer.dev/v1alpha1", "RedisCluster", NAME, s.namespace)
                gone = "redis.syncer.dev/v1alpha1", "RedisCluster"
                eventually("finalized", lambda: not s.kube.list(*gone, namespace=s.namespace).items, 120)


class OvertakenBeforeStatus:
    """The stale leader's client: right before its status write leaves, a newer leader (a real
    Reconciler on its own client) reconciles the same RedisCluster and writes its status."""

    def __init__(self, kube: ClusterClient, newer: Reconciler, log: logging.LoggerAdapter[logging.Logger]):
        self._kube = kube
        self._newer = newer
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)

    def apply_status(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        meta = body["metadata"]
        self._newer.reconcile(meta["namespace"], meta["name"], self._log)
        return self._kube.apply_status(body, options)


@pytest.mark.timeout(300)
def test_a_status_computed_before_a_newer_leader_wrote_is_refused(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=False, controller=False) as s:
        s.apply(shards=1, replicasPerShard=0)
        log = logging.LoggerAdapter(logging.getLogger(__name__))
        newer = Reconciler(s.kube, ControllerOptions(identity="newer"))
        stale = Reconciler(cast(KubeApi, OvertakenBeforeStatus(s.kube, newer, log)), ControllerOptions())

        with pytest.raises(Conflict):
            stale.reconcile(s.namespace, NAME, log)

        managers = {
            m["manager"] for m in s.obj()["metadata"]["managedFields"] if m.get("subresource") == "status"
        }
        assert managers == {FIELD_MANAGER}
        s.kube.delete(API_VERSION, KIND, NAME, s.namespace)
        newer.reconcile(s.namespace, NAME, log)  # the finalizer lets it go
        eventually("finalized", lambda: not s.kube.list(API_VERSION, KIND, namespace=s.namespace).items, 60)
