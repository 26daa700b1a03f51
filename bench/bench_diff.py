"""``syncer diff`` vs ``kubectl diff --server-side`` on the same objects against the same apiserver.

Run: ``python bench/bench_diff.py [--objects 250] [--changed 20] [--created 5] [--runs 5]``. Starts a
one-cluster local fleet in a temporary folder, installs the RedisCluster CRD and applies the objects as
a previous sync would have; then the desired revision changes ``--changed`` of them and adds
``--created`` new ones (together about 10% of the objects by default). Measured as whole processes
(median of ``--runs``), each started the way a person or CI starts it:

* ``syncer diff -o json`` (the ``syncer`` command of this Python environment);
* ``kubectl diff --server-side --field-manager=syncer --concurrency=1 -f DIR`` and the same with
  ``--concurrency=8``, over the very bodies syncer would apply.

And for reference only: ``syncer diff`` in process (the engine's ``diff_fleet``, no start-up), and a
process that imports the libraries ``syncer diff`` is built on and does nothing else, the floor of any
diff made with them. Every
contender must report the same set of changed objects. Goals, as whole processes: syncer at least 3x
faster than kubectl with ``--concurrency=1`` and at least 1.5x faster than with ``--concurrency=8``.

Each contender runs once untimed first; ``syncer`` runs with ``PYTHONDONTWRITEBYTECODE`` removed from
its environment, so that its bytecode cache is warm as for an installed command. The contenders take
turns run by run (so that a burst of load elsewhere on the machine hits all of them alike), and the
load average is printed: figures taken on a loaded machine are not comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from devfleet import fleet as devfleet
from syncer.crds import load_crd
from syncer.domain import Manifest, ObjectKey, applied_body
from syncer.engine.diff import ClusterTarget, diff_fleet
from syncer.errors import Location, NotFound
from syncer.kube import ApplyOptions, ClientOptions, ClusterClient
from syncer.manifests import load_fleet

CLUSTER, NAMESPACE = "bench", "bench"
API_VERSION = "redis.syncer.dev/v1alpha1"
GOAL_SERIAL = 3.0
GOAL_PARALLEL = 1.5


def body(name: str, shards: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "RedisCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"version": "7.2", "shards": shards, "resources": {"requests": {"memory": "1Gi"}}},
    }


def as_applied(b: dict[str, Any]) -> dict[str, Any]:
    key = ObjectKey(CLUSTER, "redis.syncer.dev", "RedisCluster", NAMESPACE, b["metadata"]["name"])
    return applied_body(Manifest(key, API_VERSION, b, Location("bench")))


def prepare_cluster(api: ClusterClient, live: list[dict[str, Any]]) -> None:
    api.apply(load_crd(), ApplyOptions(field_manager="bench", force=True))
    api.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, ApplyOptions("bench")
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            api.list(API_VERSION, "RedisCluster")
            break
        except NotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda b: api.apply(as_applied(b)), live))


def write_inputs(root: Path, desired: list[dict[str, Any]]) -> tuple[Path, Path]:
    """The fleet repository for syncer, and the same objects as syncer would apply them, for kubectl."""
    repo = root / "repo"
    (repo / "clusters" / CLUSTER).mkdir(parents=True)
    fleet = {"apiVersion": "syncer.dev/v1alpha1", "kind": "Fleet", "clusters": [{"name": CLUSTER}]}
    (repo / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    (repo / "clusters" / CLUSTER / "redis.yaml").write_text(yaml.safe_dump_all(desired))
    applied = root / "applied"
    applied.mkdir()
    (applied / "redis.yaml").write_text(yaml.safe_dump_all([as_applied(b) for b in desired]))
    return repo, applied


def syncer_command() -> list[str]:
    """The ``syncer`` console script of this Python environment (what a user runs), else ``-m``."""
    script = Path(sys.executable).with_name("syncer")
    return [str(script)] if script.exists() else [sys.executable, "-m", "syncer"]


def kubectl_changed(kubeconfig: Path, folder: Path, concurrency: int) -> set[str]:
    argv = [
        "kubectl",
        "diff",
        "--server-side",
        "--field-manager=syncer",
        f"--concurrency={concurrency}",
        "--kubeconfig",
        str(kubeconfig),
    ]
    done = subprocess.run(
        [*argv, "--context", CLUSTER, "-f", str(folder)], capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"kubectl diff failed ({done.returncode}): {done.stderr[-2000:]}")
    changed = set()
    for line in done.stdout.splitlines():
        if line.startswith("diff "):
            _, namespace, name = Path(line.split()[-1]).name.rsplit(".", 2)
            changed.add(f"{namespace}/{name}")
    return changed


def syncer_cli_changed(kubeconfig: Path, repo: Path) -> set[str]:
    argv = [*syncer_command(), "diff", "--repo", str(repo), "--kubeconfig", str(kubeconfig)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([*argv, "-o", "json"], capture_output=True, text=True, check=False, env=env)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"syncer diff failed ({done.returncode}): {done.stderr[-2000:]}")
    document = json.loads(done.stdout)
    return {
        f"{o['namespace']}/{o['name']}"
        for wave in document["waves"]
        for cluster in wave["clusters"]
        for o in cluster["objects"]
        if o["action"] not in ("unchanged", "keep")
    }


Contenders = dict[str, Callable[[], set[str]]]

LIBRARIES = "import click, yaml, jsonschema, kubernetes.client, kubernetes.config"
"""What ``syncer diff`` must import before it can read a manifest or reach a cluster."""


def libraries_alone() -> set[str]:
    """A process of this Python that imports the libraries ``syncer diff`` uses and does nothing else:
    the floor of any diff built on them, before a byte is read or sent."""
    subprocess.run([sys.executable, "-c", LIBRARIES], check=True, capture_output=True)
    return set()


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed_in_turns(runs: int, contenders: Contenders) -> dict[str, tuple[float, float, set[str]]]:
    """The median time of each contender, the median CPU time of the processes it started (none for
    the in-process contender), and what it reported; one untimed run each first, then the contenders
    take turns, run by run."""
    results = {name: work() for name, work in contenders.items()}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, work in contenders.items():
            started, cpu_before = time.perf_counter(), _children_cpu()
            results[name] = work()
            times[name].append(time.perf_counter() - started)
            cpu[name].append(_children_cpu() - cpu_before)
    return {
        name: (statistics.median(times[name]), statistics.median(cpu[name]), results[name])
        for name in contenders
    }


def bench(root: Path, args: argparse.Namespace) -> bool:
    live = [body(f"rc-{i:04d}", 3) for i in range(args.objects - args.created)]
    desired = [body(b["metadata"]["name"], 5) if i < args.changed else b for i, b in enumerate(live)]
    desired += [body(f"new-{i:03d}", 3) for i in range(args.created)]
    expected = {f"{NAMESPACE}/{b['metadata']['name']}" for b in desired[: args.changed]} | {
        f"{NAMESPACE}/new-{i:03d}" for i in range(args.created)
    }
    state = devfleet.up(root / "fleet", devfleet.UpOptions(clusters=(CLUSTER,)), say=lambda m: None)
    try:
        kubeconfig = state.kubeconfig
        api = ClusterClient.from_kubeconfig(str(kubeconfig), CLUSTER, options=ClientOptions(qps=0))
        try:
            prepare_cluster(api, live)
        finally:
            api.close()
        repo, applied = write_inputs(root, desired)
        fleet = load_fleet(repo, "bench")
        target = [ClusterTarget(CLUSTER, str(kubeconfig), CLUSTER)]

        def in_process() -> set[str]:
            plan = diff_fleet(fleet, target)
            return {c.key.subject.split("/", 1)[1] for c in plan.clusters[0].changes if c.changes_something}

        load_before = os.getloadavg()
        measured = timed_in_turns(
            args.runs,
            {
                "engine": in_process,
                "cli": lambda: syncer_cli_changed(kubeconfig, repo),
                "serial": lambda: kubectl_changed(kubeconfig, applied, 1),
                "parallel": lambda: kubectl_changed(kubeconfig, applied, 8),
                "libraries": libraries_alone,
            },
        )
        load_after = os.getloadavg()
        engine_s, _, engine_set = measured["engine"]
        cli_s, cli_cpu, cli_set = measured["cli"]
        serial_s, serial_cpu, serial_set = measured["serial"]
        parallel_s, parallel_cpu, parallel_set = measured["parallel"]
        libraries_s, libraries_cpu, _ = measured["libraries"]
    finally:
        devfleet.down(root / "fleet", say=lambda m: None)
    print(
        f"objects: {len(desired)} desired ({args.changed} changed, {args.created} new), median of {args.runs}"
    )
    loads = " ".join(f"{x:.2f}" for x in load_before), " ".join(f"{x:.2f}" for x in load_after)
    print(f"load average before: {loads[0]}; after: {loads[1]}")
    print(f"syncer diff -o json (whole process):             {cli_s:8.3f} s (cpu {cli_cpu:.3f} s)")
    print(f"kubectl diff --server-side --concurrency=1:      {serial_s:8.3f} s (cpu {serial_cpu:.3f} s)")
    print(f"kubectl diff --server-side --concurrency=8:      {parallel_s:8.3f} s (cpu {parallel_cpu:.3f} s)")
    print(f"syncer diff in process (reference only):         {engine_s:8.3f} s")
    floor = f"{libraries_s:8.3f} s (cpu {libraries_cpu:.3f} s)"
    print(f"its libraries imported, nothing else (floor):    {floor}")
    print(f"  ({LIBRARIES}; the 3x goal needs the whole diff within {serial_s / GOAL_SERIAL:.3f} s)")
    serial, parallel = serial_s / cli_s, parallel_s / cli_s
    print(f"ratio kubectl --concurrency=1 / syncer:          {serial:8.2f}x (goal >= {GOAL_SERIAL:g}x)")
    print(f"ratio kubectl --concurrency=8 / syncer:          {parallel:8.2f}x (goal >= {GOAL_PARALLEL:g}x)")
    same = engine_set == cli_set == serial_set == parallel_set == expected
    print(
        f"changed objects: syncer {len(cli_set)}, kubectl {len(serial_set)} and {len(parallel_set)},"
        f" same set: {same}"
    )
    if not same:
        print(f"  only syncer: {sorted(cli_set - serial_set)}")
        print(f"  only kubectl: {sorted(serial_set - cli_set)}")
        print(f"  expected but missed: {sorted(expected - (cli_set & serial_set))}")
    return same and serial >= GOAL_SERIAL and parallel >= GOAL_PARALLEL


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=250)
    parser.add_argument("--changed", type=int, default=20)
    parser.add_argument("--created", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="syncer-bench-diff-") as tmp:
        ok = bench(Path(tmp), args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
