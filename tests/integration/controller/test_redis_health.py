"""Ready tells what Redis does while it happens: a frozen or killed master turns Ready False within
2 s of the writer's outage, with a Redis-level reason, and Ready comes back once Redis recovered; a
frozen replica turns Ready False within 2 s of its SIGSTOP, seen on a watch of the RedisCluster; a
scale-in's migration shows as this generation's Reconciling=True with the slots moved so far.

Real redis-servers run behind the pods of the loopback fleet; a client writes without pause and
every acknowledged write (WAIT 1) is checked afterwards."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Any

import pytest

from devfleet import fleet as devfleet
from syncer.controller.model import API_VERSION, KIND, ControllerOptions
from syncer.controller.topology import RedisNode
from tests.integration.controller.kit import condition, controller_running, is_ready, recording
from tests.integration.controller.rediskit import NAME, Scene, SceneStarter, check, controller_options
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

REDIS_LEVEL = {"MasterUnreachable", "ClusterStateFail"}
WITHIN = 2.0
BACK = 30.0  # seconds from the master answering again to Ready=True


def _node(address: str) -> RedisNode:
    host, _, port = address.rpartition(":")
    return RedisNode(host, int(port))


def _watch_ready_false(s: Scene, since: float, timeout: float) -> tuple[float, dict[str, Any]]:
    """Poll the Ready condition until it is False with a Redis-level reason: when that was seen
    (monotonic) and the condition."""
    deadline = since + timeout
    other: list[str] = []
    while True:
        ready = s.ready()
        if ready.get("status") == "False" and ready.get("reason") in REDIS_LEVEL:
            return time.monotonic(), ready
        if ready.get("status") == "False" and not other:
            other.append(f"Ready=False {ready.get('reason')} after {time.monotonic() - since:.2f}s")
        if time.monotonic() > deadline:
            raise AssertionError(f"no Redis-level reason within {timeout:g}s ({other}); Ready: {ready}")
        time.sleep(0.05)


@contextmanager
def _outage(s: Scene, how: str, victim: RedisNode) -> Iterator[None]:
    with ExitStack() as stack:
        if how == "frozen":
            stack.enter_context(s.pods.hung(victim))
        else:
            s.pods.kill(victim)
        yield


@contextmanager
def _controller_with_default_timing(fleet: devfleet.Fleet, s: Scene) -> Iterator[None]:
    """The controller as it runs by default: the Redis topology looked at every 10 s while Ready and
    every 5 s while not, 5 s per call (the scene's own controller looks every second)."""
    defaults = ControllerOptions()
    options = replace(
        controller_options(fleet, s.namespace),
        topology_interval=defaults.topology_interval,
        topology_timeout=defaults.topology_timeout,
        poll_seconds=defaults.poll_seconds,
    )
    with controller_running(options):
        yield
        s.kube.delete(API_VERSION, KIND, NAME, s.namespace)
        eventually("deleted", lambda: not s.kube.list(API_VERSION, KIND, namespace=s.namespace).items, 60)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("how", ["frozen", "killed"])
def test_a_frozen_or_killed_master_turns_ready_false_within_2s(
    redis_scene: SceneStarter, loopback_fleet: devfleet.Fleet, how: str
) -> None:
    with (
        redis_scene(persistence=True, controller=False) as s,
        _controller_with_default_timing(loopback_fleet, s),
    ):
        s.apply(shards=3, replicasPerShard=1)
        for _episode in range(2):
            s.wait_ready()
            traffic = s.traffic(bulk=2000, durable=True)
            eventually("the writer to write", lambda t=traffic: t.writes > 20, 30)  # type: ignore[misc]
            victim = _node(next(iter(s.masters())))
            signalled = time.monotonic()
            with _outage(s, how, victim):
                seen, down = _watch_ready_false(s, signalled, 30)
                hold = 6.0 if how == "frozen" else 0.0
                # Long enough for Redis to fail the frozen master over: Ready stays False meanwhile.
                time.sleep(hold)
            print(f"{how} master {victim}: Ready=False after {seen - signalled:.2f}s: {down['reason']}: ")
            print(f"  {down['message'][:200]}", flush=True)
            eventually("the master to answer again", lambda v=victim: v in s.nodes(), 30)  # type: ignore[misc]
            answering = time.monotonic()
            eventually("Ready=True again", lambda: s.ready().get("status") == "True", BACK)
            recovered = time.monotonic()
            check(traffic.stop(s.nodes()), f"{how} master")
            during = [g for g in traffic.gaps if g[0] <= signalled <= g[1] or g[0] <= seen <= g[1]]
            outage = during[0] if during else None
            assert outage is not None, f"the writer saw no outage: {traffic.gaps}"
            print(
                f"  writer's outage {outage[1] - outage[0]:.2f}s from {outage[0] - signalled:+.2f}s, "
                f"Ready back {recovered - answering:.2f}s after the master answered again",
                flush=True,
            )
            assert down["reason"] in REDIS_LEVEL, down
            assert seen - signalled <= WITHIN, f"{how}: Ready=False only after {seen - signalled:.2f}s"
            assert seen - outage[0] <= WITHIN, f"{how}: Ready=False {seen - outage[0]:.2f}s into the outage"


FROZEN = 5.0  # seconds the replica stays frozen after Ready went False


@pytest.mark.timeout(900)
def test_a_frozen_replica_turns_ready_false_within_2s_on_a_watch(
    redis_scene: SceneStarter, loopback_fleet: devfleet.Fleet
) -> None:
    with (
        redis_scene(persistence=False, controller=False) as s,
        _controller_with_default_timing(loopback_fleet, s),
    ):
        s.apply(shards=3, replicasPerShard=1)
        s.wait_ready()
        time.sleep(2.0)  # the health watch starts on the cluster once a reconcile found it healthy
        replica = next(e for e in s.cluster_nodes() if e.is_replica)
        victim = _node(replica.address)
        with recording(s.kube, API_VERSION, KIND, s.namespace) as seen:
            assert is_ready(seen.seen[-1]), condition(seen.seen[-1], "Ready")
            signalled = time.monotonic()
            with s.pods.hung(victim):

                def reported() -> tuple[float, dict[str, Any]] | None:
                    for when, obj in zip(seen.arrived, seen.seen, strict=False):
                        ready = condition(obj, "Ready")
                        if ready.get("status") == "False" and when >= signalled:
                            return when, ready
                    return None

                when, down = eventually("Ready=False on the watch", reported, 30.0)
                time.sleep(FROZEN)
                resumed = time.monotonic()
            eventually("Ready=True again", lambda: s.ready().get("status") == "True", BACK)
            back = time.monotonic()
        frozen = [
            condition(o, "Ready")
            for t, o in zip(seen.arrived, seen.seen, strict=False)
            if when <= t <= resumed
        ]
        print(f"frozen replica {victim}: Ready=False after {when - signalled:.2f}s: {down['reason']}: ")
        print(f"  {down['message'][:200]}; Ready back {back - resumed:.2f}s after SIGCONT", flush=True)
        assert when - signalled <= WITHIN, f"Ready=False only {when - signalled:.2f}s after the SIGSTOP"
        assert down["reason"] == "ReplicaUnreachable", down
        assert f"replica {victim}" in down["message"], down
        assert all(c.get("status") == "False" for c in frozen), f"Ready flapped while frozen: {frozen}"


MOVED = re.compile(r"(\d+)/(\d+) moved")


@pytest.mark.timeout(900)
def test_a_scale_in_shows_this_generation_migrating_with_progress(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=False, shards=3, replicasPerShard=1) as s:
        traffic = s.traffic(bulk=30000)
        before = s.obj()["metadata"]["generation"]
        s.apply(shards=2)
        generation = before + 1
        samples: list[tuple[float, int, dict[str, Any], dict[str, Any]]] = []
        applied = time.monotonic()
        while True:
            obj = s.obj()
            status = obj.get("status") or {}
            when, observed = time.monotonic() - applied, int(status.get("observedGeneration") or 0)
            sample = (when, observed, condition(obj, "Ready"), condition(obj, "Reconciling"))
            samples.append(sample)
            if sample[1] == generation and sample[2].get("status") == "True":
                break
            assert sample[0] < 600, samples[-1]
            time.sleep(0.1)
        check(traffic.stop(s.nodes()), "shards 3 -> 2")
        migrating = [x for x in samples if x[3].get("reason") == "SlotsMigrating"]
        print(f"{len(samples)} status samples, {len(migrating)} while migrating, e.g. {migrating[:1]}")
        assert migrating, f"no status said slots were moving: {[(x[1], x[2].get('reason')) for x in samples]}"
        for when, observed, ready, reconciling in migrating:
            assert observed == generation, (when, observed)
            assert ready.get("status") == "False", ready
            assert reconciling.get("status") == "True", reconciling
            found = MOVED.search(str(reconciling.get("message")))
            assert found is not None, reconciling
            assert int(found[1]) <= int(found[2]), reconciling
            assert int(found[2]) > 0, reconciling
        first = samples.index(migrating[0])
        later = samples[first:]
        assert all(x[1] == generation for x in later), "the old generation came back"
        assert not any(x[2].get("status") == "True" for x in later[:-1]), "Ready=True while migrating"
