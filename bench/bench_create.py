"""A RedisCluster from create to Ready, with real redis-servers, against Redis' own floor.

Run: ``python bench/bench_create.py [--runs 5] [--shards 3] [--replicas 1] [--delays 0,0.5:1]``. The
bench starts its own local fleet (one cluster whose pods get loopback IPs, as tests/integration/
controller does), and for each run and each pod start delay of ``--delays``:

* a fresh namespace with one redis-server per pod behind kwok (the tests' ``PodRedis`` stand-in
  kubelet; with a delay ``low:high`` each pod's server starts a random while in that range after
  the pod got its IP, as a container that takes a while to start) and a ``syncer controller
  --topology`` process watching it, started and idle;
* the RedisCluster is created; the figure is the time until a client of the apiserver reads
  Ready=True for its generation (``observedGeneration``), polled every 10 ms. The breakdown beside it
  comes from the controller's own records of each formation step (its JSON log lines with
  ``formation_step`` and ``at``: pods Ready, servers answering, met, slots assigned, replicas told,
  cluster_state ok, healthy, status with Ready stored), and from the stand-in kubelet (every pod made,
  the last server started);
* Redis' floor in the same run: 6 fresh redis-servers started as whole processes, ``redis-cli
  --cluster create ... --cluster-replicas N --cluster-yes`` as soon as they answer, timed from the
  servers' start until every node says ``cluster_state:ok`` (Redis lets no master say it within 2 s
  of its start: ``CLUSTER_WRITABLE_DELAY``).

It prints each run, the medians, and the ratio of the median create-to-Ready to the median floor,
and exits 0 when that ratio is within ``--goal`` (default 1.25) on every setup whose pods start
without delay (with a delay the servers start later than the floor's by construction).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_reshard import _free_port, _server  # noqa: E402
from devfleet import fleet as devfleet  # noqa: E402
from devfleet.access import install_redis_crd  # noqa: E402
from syncer.controller.formation import FormationMark, FormationStep, breakdown  # noqa: E402
from syncer.controller.model import API_VERSION, FIELD_MANAGER, KIND  # noqa: E402
from syncer.controller.topology import RedisNode  # noqa: E402
from syncer.errors import NotFound  # noqa: E402
from syncer.kube import ApplyOptions, ClusterClient  # noqa: E402
from tests.integration.controller.podredis import PodRedis  # noqa: E402

CLUSTER = "create"
NAME = "cache"
READY = "Ready seen by a client"
PODS_MADE = "every pod made (kwok)"
SERVERS_STARTED = "last server started (stand-in kubelet)"


class Timeline:
    """The first moment (seconds after ``start``) every pod of one creation existed, sampled every
    20 ms: what the apiserver and kwok take before any server can start."""

    def __init__(self, kube: ClusterClient, namespace: str, expected: int) -> None:
        self.kube, self.namespace, self.expected = kube, namespace, expected
        self.start = time.monotonic()
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.wait(0.02) and PODS_MADE not in self.seen:
            try:
                items = self.kube.list("v1", "Pod", namespace=self.namespace).items
            except Exception:  # a sample is best effort; the create-to-Ready figure is not
                continue
            if len(items) >= self.expected:
                self.seen.setdefault(PODS_MADE, time.monotonic() - self.start)


def _is_ready(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    ready = [c for c in status.get("conditions") or () if c.get("type") == "Ready"]
    return (
        bool(ready)
        and ready[0].get("status") == "True"
        and status.get("observedGeneration") == (obj["metadata"]["generation"])
    )


def _controller(fleet: devfleet.Fleet, namespace: str, log: Path, source: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "syncer", "controller",
        "--kubeconfig", str(fleet.kubeconfig), "--context", CLUSTER,
        "--watch-namespace", namespace, "--no-leader-elect", "--topology",
        "--topology-timeout", "1", "--metrics-port", "0",
    ]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=source,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")]),
            },
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


def formation_marks(log: Path) -> list[FormationMark]:
    """The controller's records of its formation steps: the JSON log lines with ``formation_step``."""
    marks: list[FormationMark] = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "formation_step" in entry:
            marks.append(FormationMark(FormationStep(entry["formation_step"]), float(entry["at"])))
    return marks


@dataclass(frozen=True)
class Setup:
    """One contender: the controller's source tree and the pod start delay (``low:high`` seconds)."""

    index: int
    delay: str
    source: Path

    @property
    def title(self) -> str:
        which = "" if self.source == ROOT else f", controller of {self.source}"
        return f"pod start delay {self.delay} s{which}"


def _parse_delay(text: str) -> tuple[float, float]:
    low, _, high = text.partition(":")
    return float(low), float(high or low)


def syncer_run(
    fleet: devfleet.Fleet,
    kube: ClusterClient,
    root: Path,
    setup: Setup,
    *,
    run: int,
    args: argparse.Namespace,
) -> dict[str, float]:
    """One creation with the controller and pod start delay of ``setup``."""
    label = f"{run}-{setup.index}"
    delay = _parse_delay(setup.delay)
    namespace = "b-" + hashlib.sha1(f"{label}{time.time()}".encode()).hexdigest()[:10]
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    pods = PodRedis(
        kube, namespace, root / f"pods-{label.replace(':', '_')}", persistence=False, start_delay=delay
    ).start()
    log = (args.logs or root) / f"controller-{label}.log"
    process = _controller(fleet, namespace, log, setup.source)
    expected = args.shards * (1 + args.replicas)
    try:
        _wait_started(log, process)
        timeline = Timeline(kube, namespace, expected)
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
        created_at = time.time()
        timeline.start = time.monotonic()
        kube.create(body)
        timeline.thread.start()
        deadline = timeline.start + args.timeout
        while True:
            if _is_ready(kube.get(API_VERSION, KIND, NAME, namespace)):
                seconds = time.monotonic() - timeline.start
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{label}: not Ready within {args.timeout} s; controller log {log}")
            time.sleep(0.01)
        timeline.stop.set()
        timeline.thread.join(5)
        found = {READY: seconds, **timeline.seen}
        if len(pods.started) >= expected:
            found[SERVERS_STARTED] = max(pods.started.values()) - created_at
        time.sleep(0.2)  # the controller logs the steps of a reconcile once its status is written
        for span in breakdown(created_at, formation_marks(log)):
            found[f"controller: {span.step.value}"] = span.since_start
        return found
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        # The controller is gone: its finalizer is taken off as it would (its field manager applies
        # the metadata without it), so that the namespace can go.
        meta = {"name": NAME, "namespace": namespace}
        kube.apply({"apiVersion": API_VERSION, "kind": KIND, "metadata": meta}, ApplyOptions(FIELD_MANAGER))
        kube.delete(API_VERSION, KIND, NAME, namespace)
        pods.stop()
        kube.delete("v1", "Namespace", namespace)
        _wait_gone(kube, namespace)


def _wait_gone(kube: ClusterClient, namespace: str) -> None:
    """Until the namespace is deleted: the next creation does not share the machine with its clean-up."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            kube.get("v1", "Namespace", namespace)
        except NotFound:
            return
        time.sleep(0.2)
    raise SystemExit(f"namespace {namespace} was not deleted within 120 s")


def _cluster_ok(conns: list[redis.Redis]) -> bool:
    try:
        return all(c.execute_command("CLUSTER", "INFO").find("cluster_state:ok") >= 0 for c in conns)
    except redis.RedisError:
        return False


def redis_floor(root: Path, label: str, args: argparse.Namespace) -> float:
    """Fresh redis-servers started as whole processes, formed by ``redis-cli --cluster create`` as soon
    as they answer: seconds from their start until every node says cluster_state:ok."""
    folder = root / f"cli-{label}"
    folder.mkdir(parents=True)
    nodes = [RedisNode("127.0.0.1", _free_port()) for _ in range(args.shards * (1 + args.replicas))]
    conns = [redis.Redis(n.host, n.port, decode_responses=True, socket_timeout=5) for n in nodes]
    started = time.monotonic()
    procs = [_server(folder, n.port) for n in nodes]
    try:
        for conn in conns:
            while True:
                try:
                    conn.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() - started > 15:
                        raise SystemExit(f"redis-server {conn} did not start") from None
                    time.sleep(0.005)
        argv = ["redis-cli", "--cluster", "create", *map(str, nodes)]
        argv += ["--cluster-replicas", str(args.replicas), "--cluster-yes"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
        if done.returncode != 0 or "All 16384 slots covered" not in done.stdout:
            raise SystemExit(f"redis-cli --cluster create failed: {done.stdout[-800:]} {done.stderr[-400:]}")
        while not _cluster_ok(conns):
            if time.monotonic() - started > 30:
                raise SystemExit("redis-cli's cluster did not say cluster_state:ok within 30 s")
            time.sleep(0.005)
        return time.monotonic() - started
    finally:
        for conn in conns:
            conn.close()
        for p in procs:
            p.kill()
            p.wait()


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument(
        "--delays", default="0,0.5:1", help="pod start delays to run, comma separated (low:high seconds)"
    )
    parser.add_argument(
        "--baseline", type=Path, help="also run, in turn, the controller of this source tree (before/after)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one run may take to Ready")
    parser.add_argument("--logs", type=Path, help="keep each run's controller log in this folder")
    parser.add_argument("--goal", type=float, default=1.25, help="median create-to-Ready / median floor")
    args = parser.parse_args()
    for tool in ("redis-cli", "redis-server"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not on PATH (Debian packages redis-server, redis-tools)")
    delays = [d.strip() for d in args.delays.split(",") if d.strip()]
    sources = [ROOT] + ([args.baseline.resolve()] if args.baseline else [])
    setups = [Setup(i, d, src) for i, (src, d) in enumerate((src, d) for d in delays for src in sources)]
    results: dict[Setup, list[dict[str, float]]] = {setup: [] for setup in setups}
    floor: list[float] = []
    loads: list[str] = [_load()]
    with tempfile.TemporaryDirectory(prefix="bench-create-") as tmp:
        root = Path(tmp)
        options = devfleet.UpOptions(clusters=(CLUSTER,), loopback_pods=True)
        fleet = devfleet.up(root / "fleet", options, say=lambda _: None)
        try:
            kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), CLUSTER)
            install_redis_crd(kube, field_manager="bench")
            for run in range(args.runs):
                # Each run starts with another setup: what runs first after the previous run's
                # clean-up (namespaces still being deleted) is not always the same contender.
                for setup in setups[run % len(setups) :] + setups[: run % len(setups)]:
                    found = syncer_run(fleet, kube, root, setup, run=run, args=args)
                    results[setup].append(found)
                    marks = ", ".join(f"{k} {v:.2f}" for k, v in sorted(found.items(), key=lambda kv: kv[1]))
                    print(f"run {run + 1}, {setup.title}: {marks}", flush=True)
                floor.append(redis_floor(root, str(run), args))
                print(
                    f"run {run + 1}: Redis' floor (redis-cli --cluster create) {floor[-1]:.2f} s", flush=True
                )
                loads.append(_load())
            kube.close()
        finally:
            devfleet.down(root / "fleet", say=lambda _: None)
    return report(args, results, floor, loads)


def report(
    args: argparse.Namespace,
    results: dict[Setup, list[dict[str, float]]],
    floor: list[float],
    loads: list[str],
) -> int:
    base = statistics.median(floor)
    shape = f"{args.shards} shards x {args.replicas} replica(s), {args.runs} runs"
    print(f"\n{shape}; load average (1, 5, 15 min; the machine is shared): {loads[0]} at the start,")
    print(f"{loads[-1]} at the end")
    print(
        "Redis' floor (fresh servers, redis-cli --cluster create, until every node says ok): "
        f"median {base:.2f} s, max {max(floor):.2f} s"
    )
    met = True
    for setup, runs in results.items():
        ready = [r[READY] for r in runs]
        ratio = statistics.median(ready) / base
        print(
            f"\n{setup.title}: create -> {READY}: median {statistics.median(ready):.2f} s, "
            f"max {max(ready):.2f} s, {ratio:.2f}x the floor"
        )
        keys = sorted(
            {k for r in runs for k in r}, key=lambda k: statistics.median(r.get(k, 99.0) for r in runs)
        )
        for key in keys:
            values = [r[key] for r in runs if key in r]
            print(f"  {statistics.median(values):6.2f} s  {key} (median of {len(values)})")
        if _parse_delay(setup.delay) == (0.0, 0.0) and setup.source == ROOT:
            ok = ratio <= args.goal
            met = met and ok
            print(f"goal: median within {args.goal}x of the floor: {'met' if ok else 'not met'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
