"""The time and the queries a wave's canary analysis adds, on a local fleet with real Redis and its
real Prometheus.

The fleet runs with ``--redis``: a Redis pod in each cluster gets a real redis-server and a real
redis_exporter, scraped by the fleet's Prometheus with the cluster's name as ``cluster``. One revision
(a Namespace per cluster) is rolled out in two waves (the canary, then the rest; bake 0) three ways:
without analysis, with the shipped ``redis-evicted-keys`` template (policies/analysis-templates.yaml,
``initialDelay`` 0, measured ``--count`` times every ``--interval`` seconds) judging the canary's
real exporter series, and with the same query compared with a ``baseline: previous`` (the clusters
not yet changed). Printed per way: the canary wave's time, what analysis added to it next to
``interval x (count - 1)`` (the least it can add) and their ratio, and the Prometheus queries it
made. Goal: what analysis adds beyond ``interval x (count - 1)`` is at most 0.5 s per measurement.

Run: ``python bench/bench_analysis.py [--count 5] [--interval 1]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from devfleet import fleet as devfleet
from devfleet import prometheus
from syncer.analysis import PrometheusSource, QueryAnswer
from syncer.config.rollout import RolloutPolicy, parse_rollout_policy
from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey
from syncer.domain.progress import PassEvent, Step
from syncer.engine.analysis_gate import query_prometheus
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions
from syncer.errors import Location
from syncer.kube import ClusterClient
from syncer.leader.fence import NO_LEASE, everywhere
from syncer.rollout.moves import RolloutOutcome

CLUSTERS = ("canary", "eu-1", "us-1")
UNLEASED = everywhere(NO_LEASE)  # the bench writes its own clusters, holding no Lease
LABELS = {"canary": {"tier": "canary"}, "eu-1": {"tier": "prod"}, "us-1": {"tier": "prod"}}
POLICIES = Path(__file__).resolve().parents[1] / "policies"
REDIS_NAMESPACE = "bench-redis"
EVICTED = 'max(increase(redis_evicted_keys_total{cluster="${cluster}"}[1m]))'


def redis_pod(api: ClusterClient) -> None:
    """A pod as the controller renders one (a ``redis`` container and an ``exporter`` sidecar): the
    fleet's stand-in kubelet runs a real redis-server and redis_exporter behind it."""
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": REDIS_NAMESPACE}})
    labels = {"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": "bench"}
    containers = [
        {"name": "redis", "image": "redis:7.2", "ports": [{"containerPort": 6379}]},
        {"name": "exporter", "image": "oliver006/redis_exporter", "ports": [{"containerPort": 9121}]},
    ]
    meta = {"name": "bench-0", "namespace": REDIS_NAMESPACE, "labels": labels}
    api.apply({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": containers}})


def desired(revision: str, namespace: str) -> DesiredFleet:
    labels = {"bench.syncer.dev/revision": revision}
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}
    return DesiredFleet(
        revision,
        {
            name: ClusterManifests.of(
                name,
                [Manifest(ObjectKey(name, "", "Namespace", "", namespace), "v1", body, Location("bench"))],
                LABELS[name],
            )
            for name in CLUSTERS
        },
    )


def policy(local: prometheus.LocalPrometheus, analysis: dict[str, Any] | None) -> RolloutPolicy:
    canary: dict[str, Any] = {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}}
    if analysis is not None:
        canary["analysis"] = analysis
    data = {
        "prometheus": {"url": local.url, "caFile": str(local.ca_file)},
        "analysisTemplatesFile": "analysis-templates.yaml",
        "defaults": {"bake": "0s"},
        "waves": [canary, {"name": "rest", "percent": 100}],
    }
    return parse_rollout_policy(data, str(POLICIES / "bench.yaml"), POLICIES)


def run(
    clients: dict[str, ClusterClient], rollout_policy: RolloutPolicy, namespace: str
) -> tuple[float, int]:
    """The canary wave's seconds (its first apply to its proceed) and the Prometheus queries made."""
    asked = [0]

    def counted(source: PrometheusSource, promql: str, at: float | None) -> QueryAnswer:
        asked[0] += 1
        return query_prometheus(source, promql, at)

    marks: dict[str, float] = {}

    def listen(event: PassEvent) -> None:
        if event.wave == "canary" and event.step is Step.APPLYING:
            marks.setdefault("start", time.monotonic())
        if event.wave == "canary" and event.step is Step.GATE_PROCEED:
            marks["end"] = time.monotonic()

    state = f"{namespace}-state"
    # A previous revision first, so every way measures a second rollout: a ``baseline: previous``
    # then has clusters on the previous revision to query (on a first rollout it queries nothing).
    previous = RolloutOptions(rollout=policy_without(rollout_policy), state_namespace=state, health_poll=0.2)
    first = FleetRollout(clients, previous, hooks=RolloutHooks(fences=UNLEASED)).sync(
        desired(f"{namespace}-previous", namespace)
    )
    if first.outcome is not RolloutOutcome.APPLIED:
        raise SystemExit(f"the previous revision did not apply: {first}")
    options = RolloutOptions(rollout=rollout_policy, state_namespace=state, health_poll=0.2)
    report = FleetRollout(
        clients, options, listener=listen, hooks=RolloutHooks(fences=UNLEASED, query=counted)
    ).sync(desired(namespace, namespace), last_good=desired(f"{namespace}-previous", namespace))
    if report.outcome is not RolloutOutcome.APPLIED:
        raise SystemExit(f"the rollout did not apply: {report}")
    return marks["end"] - marks["start"], asked[0]


def policy_without(rollout_policy: RolloutPolicy) -> RolloutPolicy:
    """``rollout_policy`` with no analysis in any wave."""
    waves = tuple(
        replace(w, gate=replace(w.gate, analysis=replace(w.gate.analysis, metrics=())))
        for w in rollout_policy.waves
    )
    return replace(rollout_policy, waves=waves)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as tmp:
        root = Path(tmp) / "fleet"
        state = devfleet.up(root, devfleet.UpOptions(clusters=CLUSTERS, redis=True), say=lambda m: None)
        clients = {n: ClusterClient.from_kubeconfig(str(state.kubeconfig), n) for n in CLUSTERS}
        try:
            local = prometheus.start(root, say=lambda m: None)
            for api in clients.values():
                redis_pod(api)
            deadline = time.monotonic() + 120
            up = f'count(redis_up{{namespace="{REDIS_NAMESPACE}"}} == 1)'
            while local.query(up) != 3.0:
                if time.monotonic() > deadline:
                    raise SystemExit("Prometheus did not see a real redis_exporter in each cluster in 120s")
                time.sleep(0.5)
            time.sleep(3)  # two scrapes within the window: increase() has a value on every cluster
            timing = {"interval": f"{int(args.interval * 1000)}ms", "count": args.count}
            shipped = {"name": "redis-evicted-keys", "args": {**timing, "initialDelay": "0s", "window": "1m"}}
            compared = {
                "name": "evicted",
                "query": EVICTED,
                "baseline": "previous",
                "failureCondition": "result > baseline + 1.0",
                **timing,
            }
            ways = {
                "no analysis": None,
                "redis-evicted-keys": {"templates": [shipped]},
                "+ baseline previous": {"metrics": [compared]},
            }
            base = 0.0
            least = args.interval * (args.count - 1)
            ok = True
            print(f"count {args.count}, interval {args.interval:g}s: least added {least:g}s")
            for index, (way, chosen) in enumerate(ways.items()):
                seconds, asked = run(clients, policy(local, chosen), f"bench-analysis-{index}")
                if chosen is None:
                    base = seconds
                    print(f"{way:>20}: canary wave {seconds:6.2f}s, {asked} queries")
                    continue
                added = seconds - base
                over = added - least
                ok = ok and over <= 0.5 * args.count
                ratio = f"{added / least:.3f}x" if least else "-"
                said = f"added {added:6.2f}s ({over:+.2f}s beyond, {ratio} of it), {asked} queries"
                print(f"{way:>20}: canary wave {seconds:6.2f}s, {said}")
        finally:
            for client in clients.values():
                client.close()
            devfleet.down(root, say=lambda m: None)
    print("goal met" if ok else "goal NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
