"""What tracing costs a pass: the same rollout with tracing off and on, on the same fleet, in one run.

Run: ``python bench/bench_tracing.py [--objects 100] [--runs 3]``. Starts a three-cluster local fleet
in a temporary folder, installs the RedisCluster CRD and starts the fleet's Jaeger, then ``--runs``
times each, alternating which goes first: a child Python process rolls a new revision of
``--objects`` RedisClusters out to every cluster through ``FleetRollout.sync`` (one wave, bake 0;
every object changes, so every object is planned, dry-run and applied), once without
``OTEL_EXPORTER_OTLP_ENDPOINT`` and once with it pointing at the Jaeger. A stand-in marks each
RedisCluster Ready for its generation so the gate can pass (bench_apply's). The child times the sync
alone (its spans are flushed after); the parent counts the apiservers' requests around each child
(``apiserver_request_total``). Printed: the median seconds of each, the ratio on/off (goal: under
1.05), the requests of each (reads vary with how often the health gate looks) and their writes (the
traceparent annotation rides on the writes already made: the goal is the same count, give or take the
stand-in's status writes, which the apiservers count too: within 1%). On a shared machine single
syncs vary by seconds: compare medians of several runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_apply import (
    CLUSTERS,
    Counts,
    StandInController,
    agent_options,
    delta,
    manifests,
    snapshot,
    write_repo,
    writes,
)

from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutHooks
from syncer.kube import ClientOptions, ClusterClient
from syncer.leader.fence import NO_LEASE, everywhere
from syncer.manifests import load_fleet

GOAL_RATIO = 1.05
UNLEASED = everywhere(NO_LEASE)  # the bench writes its own clusters, holding no Lease
PREFIX = "trace"


def child(kubeconfig: str, repo: str, revision: str) -> None:
    """One sync of ``repo`` as ``revision``; prints its seconds as JSON, then flushes the spans."""
    from syncer import tracing

    clients = {name: ClusterClient.from_kubeconfig(kubeconfig, name) for name in CLUSTERS}
    rollout = FleetRollout(clients, agent_options(), hooks=RolloutHooks(fences=UNLEASED))
    fleet = load_fleet(Path(repo), revision)
    started = time.perf_counter()
    with tracing.span("bench.pass", root=True):
        report = rollout.sync(fleet)
    seconds = time.perf_counter() - started
    tracing.flush()
    for api in clients.values():
        api.close()
    print(json.dumps({"seconds": seconds, "outcome": str(report.outcome)}), flush=True)


def repo_of(root: Path, objects: int, run: int) -> Path:
    """A repository whose RedisClusters all differ from the previous run's (``timeout`` of each)."""
    files = manifests(PREFIX, objects)
    for docs in files.values():
        for doc in docs:
            if doc["kind"] == "RedisCluster":
                doc["spec"]["redisConfig"]["timeout"] = str(300 + run)
    return write_repo(root / f"repo-{run}", CLUSTERS, files, "base")


def one_sync(kubeconfig: Path, repo: Path, run: int, endpoint: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if endpoint:
        env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "syncer-bench"}
    argv = [sys.executable, __file__, "--child", str(kubeconfig), str(repo), f"rev-{run}"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the sync process failed:\n{done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return answer


def total(counts: Mapping[str, Counts]) -> int:
    return sum(sum(c.values()) for c in counts.values())


def bench(root: Path, args: argparse.Namespace) -> bool:
    from devfleet import fleet as devfleet
    from devfleet import jaeger
    from devfleet.access import install_redis_crd

    state = devfleet.up(root / "fleet", devfleet.UpOptions(clusters=CLUSTERS), say=lambda m: None)
    seconds: dict[str, list[float]] = {"off": [], "on": []}
    requests: dict[str, list[int]] = {"off": [], "on": []}
    written: dict[str, list[int]] = {"off": [], "on": []}
    try:
        kubeconfig = state.kubeconfig
        apis = {
            n: ClusterClient.from_kubeconfig(str(kubeconfig), n, options=ClientOptions(qps=0))
            for n in CLUSTERS
        }
        for api in apis.values():
            install_redis_crd(api, field_manager="bench")
        local = jaeger.start(root / "fleet", say=lambda m: None)
        print(f"{len(CLUSTERS)} clusters x {args.objects} RedisClusters; Jaeger at {local.query}")
        with StandInController(apis, PREFIX):
            one_sync(kubeconfig, repo_of(root, args.objects, 0), 0, "")  # creates: not counted
            run = 0
            for turn in range(args.runs):
                for mode in ("off", "on") if turn % 2 == 0 else ("on", "off"):
                    run += 1
                    repo = repo_of(root, args.objects, run)
                    before = snapshot(apis)
                    answer = one_sync(kubeconfig, repo, run, local.otlp_http if mode == "on" else "")
                    counts = delta(before, snapshot(apis))
                    requests[mode].append(total(counts))
                    written[mode].append(sum(writes(c) for c in counts.values()))
                    seconds[mode].append(answer["seconds"])
                    took = f"{answer['outcome']} in {answer['seconds']:.2f} s"
                    print(f"  {mode:>3}: {took}, {requests[mode][-1]} requests, {written[mode][-1]} writes")
        spans = sum(len(t["spans"]) for t in local.traces("syncer-bench", limit=100))
        for api in apis.values():
            api.close()
    finally:
        devfleet.down(root / "fleet", say=lambda m: None)
    off, on = statistics.median(seconds["off"]), statistics.median(seconds["on"])
    ratio = on / off
    print("\nsummary")
    print(f"  sync, tracing off (median)   {off:.3f} s")
    print(f"  sync, tracing on (median)    {on:.3f} s")
    print(f"  ratio on / off               {ratio:.3f} (goal < {GOAL_RATIO})")
    counted = f"{statistics.median(requests['off'])} / {statistics.median(requests['on'])}"
    print(f"  requests off / on (median)   {counted}")
    writes_off, writes_on = statistics.median(written["off"]), statistics.median(written["on"])
    print(f"  writes off / on (median)     {writes_off:g} / {writes_on:g}")
    print(f"  spans Jaeger holds           {spans}")
    return ratio < GOAL_RATIO and abs(writes_on - writes_off) <= 0.01 * writes_off


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="syncer-bench-tracing-") as tmp:
        ok = bench(Path(tmp), args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
