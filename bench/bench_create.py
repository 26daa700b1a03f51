"""A RedisCluster from create to Ready, with real redis-servers, beside ``redis-cli --cluster create``.

Run: ``python bench/bench_create.py [--runs 5] [--shards 3] [--replicas 1]``. The bench starts its own
local fleet (one cluster whose pods get loopback IPs, as tests/integration/controller does), and for
each run:

* a fresh namespace with one redis-server per pod behind kwok (the tests' ``PodRedis`` stand-in
  kubelet) and a ``syncer controller --topology`` process watching it, started and idle;
* the RedisCluster is created; the time until it says Ready=True for its generation
  (``observedGeneration``) is the figure. A side thread samples the pods, the servers and the status
  every 20 ms, so the run also prints when the StatefulSets, the pods, their IPs, their Ready
  condition, the servers' first answer and the controller's first status write appeared;
* then ``redis-cli --cluster create ... --cluster-replicas N --cluster-yes`` forms a cluster of the
  same shape on fresh redis-servers started the same way (already answering), timed as a whole
  process: the part of the work that is Redis' own, as a user would compare.

It prints each run, the median and the maximum of each, and the ratio of the medians, and exits 0
when the median create-to-Ready is within ``--goal`` seconds (default 2.4).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_reshard import _free_port, _server, _wait_up  # noqa: E402
from devfleet import fleet as devfleet  # noqa: E402
from devfleet.access import install_redis_crd  # noqa: E402
from syncer.controller.model import API_VERSION, KIND  # noqa: E402
from syncer.controller.topology import RedisNode  # noqa: E402
from syncer.kube import ClusterClient  # noqa: E402
from tests.integration.controller.podredis import PodRedis  # noqa: E402

CLUSTER = "create"
NAME = "cache"


class Timeline:
    """The first moment (seconds after ``start``) each milestone of one creation was seen."""

    def __init__(self, kube: ClusterClient, namespace: str, pods: PodRedis, expected: int) -> None:
        self.kube, self.namespace, self.pods, self.expected = kube, namespace, pods, expected
        self.start = time.monotonic()
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def mark(self, what: str) -> None:
        self.seen.setdefault(what, time.monotonic() - self.start)

    def _loop(self) -> None:
        while not self.stop.wait(0.02):
            try:
                self._sample()
            except Exception:  # a sample is best effort; the create-to-Ready figure is not
                continue

    def _sample(self) -> None:
        sts = self.kube.list("apps/v1", "StatefulSet", namespace=self.namespace).items
        if sts:
            self.mark("StatefulSets made")
        items = self.kube.list("v1", "Pod", namespace=self.namespace).items
        if len(items) >= self.expected:
            self.mark("every pod made")
        if sum(1 for p in items if (p.get("status") or {}).get("podIP")) >= self.expected:
            self.mark("every pod has an IP")
        ready = 0
        for pod in items:
            conditions = (pod.get("status") or {}).get("conditions") or ()
            ready += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        if ready >= self.expected:
            self.mark("every pod Ready")
        waiting = "every pod has an IP" in self.seen and "every server answers" not in self.seen
        if waiting and len(self.pods.answering()) >= self.expected:
            self.mark("every server answers")
        obj = self.kube.get(API_VERSION, KIND, NAME, self.namespace)
        if obj.get("status"):
            self.mark("first status written")


def _is_ready(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    ready = [c for c in status.get("conditions") or () if c.get("type") == "Ready"]
    return (
        bool(ready)
        and ready[0].get("status") == "True"
        and status.get("observedGeneration") == (obj["metadata"]["generation"])
    )


def _controller(fleet: devfleet.Fleet, namespace: str, log: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "syncer", "controller",
        "--kubeconfig", str(fleet.kubeconfig), "--context", CLUSTER,
        "--watch-namespace", namespace, "--no-leader-elect", "--topology",
        "--topology-timeout", "1", "--metrics-port", "0",
    ]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT
        )


def _wait_started(log: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the controller exited ({process.returncode}): {log.read_text()[-2000:]}")
        if "controller starting" in log.read_text(errors="replace"):
            time.sleep(1.0)  # its watches list and start
            return
        time.sleep(0.05)
    raise SystemExit("the controller did not start within 60 s")


def syncer_run(
    fleet: devfleet.Fleet, kube: ClusterClient, root: Path, run: int, args: argparse.Namespace
) -> dict[str, float]:
    namespace = "b-" + hashlib.sha1(f"{run}{time.time()}".encode()).hexdigest()[:10]
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    pods = PodRedis(kube, namespace, root / f"pods-{run}", persistence=False).start()
    log = (args.logs or root) / f"controller-{run}.log"
    process = _controller(fleet, namespace, log)
    expected = args.shards * (1 + args.replicas)
    try:
        _wait_started(log, process)
        timeline = Timeline(kube, namespace, pods, expected)
        body = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": NAME, "namespace": namespace},
            "spec": {
                "version": "7.2",
                "shards": args.shards,
                "replicasPerShard": args.replicas,
                "persistence": {"enabled": False},
            },
        }
        timeline.start = time.monotonic()
        kube.create(body)
        timeline.thread.start()
        deadline = timeline.start + args.timeout
        while True:
            if _is_ready(kube.get(API_VERSION, KIND, NAME, namespace)):
                seconds = time.monotonic() - timeline.start
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"run {run}: not Ready within {args.timeout} s; controller log {log}")
            time.sleep(0.01)
        timeline.stop.set()
        timeline.thread.join(5)
        return {"ready": seconds, **timeline.seen}
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        kube.delete(API_VERSION, KIND, NAME, namespace)  # no controller: its finalizer stays
        pods.stop()
        kube.delete("v1", "Namespace", namespace)


def redis_cli_run(root: Path, run: int, args: argparse.Namespace) -> float:
    folder = root / f"cli-{run}"
    folder.mkdir(parents=True)
    nodes = [RedisNode("127.0.0.1", _free_port()) for _ in range(args.shards * (1 + args.replicas))]
    procs = [_server(folder, n.port) for n in nodes]
    try:
        for node in nodes:
            _wait_up(node)
        argv = ["redis-cli", "--cluster", "create", *map(str, nodes)]
        argv += ["--cluster-replicas", str(args.replicas), "--cluster-yes"]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - started
        if done.returncode != 0 or "All 16384 slots covered" not in done.stdout:
            raise SystemExit(f"redis-cli --cluster create failed: {done.stdout[-800:]} {done.stderr[-400:]}")
        return seconds
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one run may take to Ready")
    parser.add_argument("--logs", type=Path, help="keep each run's controller log in this folder")
    parser.add_argument("--goal", type=float, default=2.4, help="median create-to-Ready goal, seconds")
    args = parser.parse_args()
    for tool in ("redis-cli", "redis-server"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not on PATH (Debian packages redis-server, redis-tools)")
    results: list[dict[str, float]] = []
    cli: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-create-") as tmp:
        root = Path(tmp)
        options = devfleet.UpOptions(clusters=(CLUSTER,), loopback_pods=True)
        fleet = devfleet.up(root / "fleet", options, say=lambda _: None)
        try:
            kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), CLUSTER)
            install_redis_crd(kube, field_manager="bench")
            for run in range(args.runs):
                found = syncer_run(fleet, kube, root, run, args)
                results.append(found)
                marks = ", ".join(f"{k} {v:.2f}" for k, v in sorted(found.items(), key=lambda kv: kv[1]))
                print(f"run {run + 1}: syncer create -> Ready {found['ready']:.2f} s ({marks})", flush=True)
                cli.append(redis_cli_run(root, run, args))
                print(f"run {run + 1}: redis-cli --cluster create {cli[-1]:.2f} s", flush=True)
            kube.close()
        finally:
            devfleet.down(root / "fleet", say=lambda _: None)
    ready = [r["ready"] for r in results]
    shape = f"{args.shards} shards x {args.replicas} replica(s)"
    print(f"\n{shape}, {args.runs} runs")
    print(f"syncer create -> Ready: median {statistics.median(ready):.2f} s, max {max(ready):.2f} s")
    print(f"redis-cli --cluster create: median {statistics.median(cli):.2f} s, max {max(cli):.2f} s")
    print(f"syncer / redis-cli (medians): {statistics.median(ready) / statistics.median(cli):.2f}x")
    milestones = sorted({k for r in results for k in r if k != "ready"}, key=lambda k: results[0].get(k, 99))
    for key in milestones:
        values = [r[key] for r in results if key in r]
        print(f"  {key}: median {statistics.median(values):.2f} s")
    met = statistics.median(ready) <= args.goal
    print(f"goal: median create -> Ready <= {args.goal} s: {'met' if met else 'not met'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
