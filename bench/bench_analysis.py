"""The time and the queries a wave's canary analysis adds, on a local fleet with its real Prometheus.

One revision (a Namespace per cluster) is rolled out in two waves (the canary, then the rest; bake 0)
three ways: without analysis, with one metric measured ``--count`` times every ``--interval``
seconds, and with the same metric compared with a ``baseline: previous`` (the clusters not yet
changed). An exporter run here serves one gauge per cluster, which the fleet's Prometheus scrapes.
Printed per way: the canary wave's time, what analysis added to it next to ``interval x (count - 1)``
(the least it can add), and the Prometheus queries it made. Goal: what analysis adds beyond
``interval x (count - 1)`` is at most 0.5 s per measurement.

Run: ``python bench/bench_analysis.py [--count 5] [--interval 1]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from devfleet import fleet as devfleet
from devfleet import prometheus
from syncer.analysis import PrometheusSource, QueryAnswer
from syncer.config.rollout import RolloutPolicy, parse_rollout_policy
from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey
from syncer.domain.progress import PassEvent, Step
from syncer.engine.analysis_gate import query_prometheus
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions, RolloutOutcome
from syncer.errors import Location
from syncer.kube import ClusterClient

CLUSTERS = ("canary", "eu-1", "us-1")
LABELS = {"canary": {"tier": "canary"}, "eu-1": {"tier": "prod"}, "us-1": {"tier": "prod"}}


def desired(revision: str, namespace: str) -> DesiredFleet:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
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


def policy(local: prometheus.LocalPrometheus, metric: dict[str, Any] | None) -> RolloutPolicy:
    canary: dict[str, Any] = {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}}
    if metric is not None:
        canary["analysis"] = {"metrics": [metric]}
    data = {
        "prometheus": {"url": local.url, "caFile": str(local.ca_file)},
        "defaults": {"bake": "0s"},
        "waves": [canary, {"name": "rest", "percent": 100}],
    }
    return parse_rollout_policy(data, "bench")


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

    options = RolloutOptions(rollout=rollout_policy, state_namespace=f"{namespace}-state", health_poll=0.2)
    report = FleetRollout(clients, options, listener=listen, hooks=RolloutHooks(query=counted)).sync(
        desired(namespace, namespace)
    )
    if report.outcome is not RolloutOutcome.APPLIED:
        raise SystemExit(f"the rollout did not apply: {report}")
    return marks["end"] - marks["start"], asked[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as tmp:
        root = Path(tmp) / "fleet"
        state = devfleet.up(root, devfleet.UpOptions(clusters=CLUSTERS), say=lambda m: None)
        clients = {n: ClusterClient.from_kubeconfig(str(state.kubeconfig), n) for n in CLUSTERS}
        try:
            local = prometheus.start(root, say=lambda m: None)
            registry = CollectorRegistry()
            gauge = Gauge("bench_errors", "a constant error rate per cluster", ["cluster"], registry=registry)
            for name in CLUSTERS:
                gauge.labels(cluster=name).set(0.01)
            server, _ = start_http_server(0, addr="127.0.0.1", registry=registry)
            local.scrape("bench", [f"127.0.0.1:{server.server_address[1]}"])
            deadline = time.monotonic() + 60
            while local.query("count(bench_errors)") != 3.0 and time.monotonic() < deadline:
                time.sleep(0.2)
            metric = {
                "name": "errors",
                "query": 'max(bench_errors{cluster="${cluster}"})',
                "interval": f"{int(args.interval * 1000)}ms",
                "count": args.count,
                "failureCondition": "result > 0.1",
            }
            compared = {
                **metric,
                "baseline": "previous",
                "failureCondition": "result > baseline * 1.2 + 0.001",
            }
            ways = {"no analysis": None, "analysis": metric, "analysis + baseline": compared}
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
                said = f"added {added:6.2f}s ({over:+.2f}s beyond), {asked} queries"
                print(f"{way:>20}: canary wave {seconds:6.2f}s, {said}")
            server.shutdown()
        finally:
            for client in clients.values():
                client.close()
            devfleet.down(root, say=lambda m: None)
    print("goal met" if ok else "goal NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
