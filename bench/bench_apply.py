"""syncer's apply vs ``kubectl apply --server-side``, a no-op sync's requests, and the agent's peak RSS.

Run: ``python bench/bench_apply.py [--objects 500] [--agent-objects 200] [--runs 3]``. Starts a
three-cluster local fleet in a temporary folder and installs the RedisCluster CRD, then:

* **Apply** (cluster ``bench``, median of ``--runs``): ``--objects`` RedisClusters spread over a few
  namespaces (plus those Namespaces) are created by syncer's plan + apply in process
  (``plan_live_cluster`` then ``ClusterApplier``: the apply phase of a sync), once with the agent's
  default client (50 requests/s) and once without the client's rate limit; by
  ``kubectl apply --server-side -f DIR`` of the very bodies syncer applies; and, as a yardstick of what
  the apiserver itself sustains, by applying those bodies 8 at a time with no plan. Each run uses
  fresh namespaces for each contender; they are deleted (and waited for) between runs. All must leave
  the same objects with the same specs. The whole ``FleetRollout.sync`` is not timed here: it also
  gates on health, which needs a controller, and that wait is not the cost of applying.
* **Agent** (all three clusters): a child Python process syncs ``--agent-objects`` RedisClusters to
  each cluster through ``FleetRollout`` (one wave, bake 0), then syncs the same revision again, then a
  new revision with the same objects. No RedisCluster controller runs in the bench: a stand-in marks
  each RedisCluster Ready for its generation so the gate can pass; it is stopped before anything is
  counted. Requests are counted from ``apiserver_request_total`` of each apiserver around both
  repeat syncs; the goal for the repeat of the same revision is 0 writes. The child reports its peak
  RSS (VmHWM) before it exits, and so does a child that only starts up (imports, clients).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from syncer.apply import ApplyPolicy, ClusterApplier
from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain import MANAGED_BY_SELECTOR, Inventory, applied_body
from syncer.domain.changeset import EntryOutcome
from syncer.engine.diff import DiffOptions, plan_live_cluster
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions
from syncer.errors import KubeError, NotFound
from syncer.kube import ApplyOptions, ClientOptions, ClusterClient
from syncer.leader.fence import NO_LEASE, everywhere
from syncer.manifests import load_fleet

CLUSTERS = ("bench", "eu-1", "us-1")
UNLEASED = everywhere(NO_LEASE)  # the bench writes its own clusters, holding no Lease
APPLY_CLUSTER = CLUSTERS[0]
API_VERSION = "redis.syncer.dev/v1alpha1"
NAMESPACES = 5
GOAL_RATIO = 5.0
COUNTED = ("redisclusters", "namespaces", "configmaps")
"""The resources syncer reads or writes; the fleet's own components keep writing others (leases,
nodes, pods, events) all the time, which says nothing about syncer."""
WRITE_VERBS = ("APPLY", "PATCH", "POST", "PUT", "DELETE", "DELETECOLLECTION")
COLUMNS = ("LIST", "GET", "WATCH", *WRITE_VERBS, "dry-run")

Counts = Counter[tuple[str, str, bool]]
"""apiserver_request_total by (verb, resource, dry run)."""

_SIZES = (
    ("100m", "256Mi", "200mb"),
    ("250m", "1Gi", "900mb"),
    ("500m", "2Gi", "1800mb"),
    ("1", "4Gi", "3600mb"),
)
_POLICIES = ("allkeys-lru", "volatile-lru", "allkeys-lfu", "noeviction")
_VERSIONS = ("7.2.5", "7.2.4", "7.0.15")


# -- the objects ------------------------------------------------------------------------------------


def namespace_names(prefix: str) -> list[str]:
    return [f"{prefix}-team-{k}" for k in range(NAMESPACES)]


def redis_body(namespace: str, index: int) -> dict[str, Any]:
    """A RedisCluster as a platform team would write it; sizes and settings vary with ``index``."""
    cpu, memory, maxmemory = _SIZES[index % len(_SIZES)]
    name = f"cache-{index:04d}"
    return {
        "apiVersion": API_VERSION,
        "kind": "RedisCluster",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": name, "tier": ("gold", "silver", "bronze")[index % 3]},
        },
        "spec": {
            "shards": 3 + index % 4,
            "replicasPerShard": 1 + index % 2,
            "version": _VERSIONS[index % len(_VERSIONS)],
            "resources": {
                "requests": {"cpu": cpu, "memory": memory},
                "limits": {"memory": memory},
            },
            "persistence": {"enabled": index % 3 != 0, "size": "10Gi"},
            "redisConfig": {
                "maxmemory": maxmemory,
                "maxmemory-policy": _POLICIES[index % len(_POLICIES)],
                "timeout": "300",
                "tcp-keepalive": "60",
            },
        },
    }


def manifests(prefix: str, count: int) -> dict[str, list[dict[str, Any]]]:
    """File name -> documents: the Namespaces first, then one file of RedisClusters per namespace."""
    names = namespace_names(prefix)
    files: dict[str, list[dict[str, Any]]] = {
        "00-namespaces.yaml": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names
        ]
    }
    for index in range(count):
        namespace = names[index % len(names)]
        files.setdefault(f"{namespace}.yaml", []).append(redis_body(namespace, index))
    return files


def write_repo(
    root: Path, clusters: Iterable[str], files: Mapping[str, list[dict[str, Any]]], folder: str
) -> Path:
    """A fleet repository of ``clusters``; ``folder`` (``base`` or ``clusters/<name>``) holds ``files``."""
    fleet = {
        "apiVersion": "syncer.dev/v1alpha1",
        "kind": "Fleet",
        "clusters": [{"name": n} for n in clusters],
    }
    (root / folder).mkdir(parents=True)
    (root / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    for name, docs in files.items():
        (root / folder / name).write_text(yaml.safe_dump_all(docs))
    return root


# -- the cluster ------------------------------------------------------------------------------------


def delete_namespaces(api: ClusterClient, names: list[str], timeout: float = 120.0) -> None:
    """Delete ``names`` and wait until they are gone, so that the next run starts on a quiet apiserver."""
    for name in names:
        try:
            api.delete("v1", "Namespace", name)
        except NotFound:
            continue
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            try:
                api.get("v1", "Namespace", name)
            except NotFound:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"namespace {name} still there after {timeout:g}s")
            time.sleep(0.25)


def live_objects(api: ClusterClient, prefix: str) -> dict[tuple[str, str], Any]:
    """The RedisClusters in the namespaces of ``prefix``, by (namespace without prefix, name) -> spec."""
    found = {}
    for item in api.list(API_VERSION, "RedisCluster").items:
        meta = item["metadata"]
        if meta["namespace"].startswith(f"{prefix}-"):
            found[(meta["namespace"].removeprefix(f"{prefix}-"), meta["name"])] = item.get("spec")
    return found


def request_counts(api: ClusterClient) -> Counts:
    counts: Counts = Counter()
    for family in text_string_to_metric_families(api.get_text("/metrics")):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "apiserver_request_total" and labels["resource"] in COUNTED:
                counts[(labels["verb"], labels["resource"], bool(labels.get("dry_run")))] += int(sample.value)
    return counts


def snapshot(apis: Mapping[str, ClusterClient]) -> dict[str, Counts]:
    return {name: request_counts(api) for name, api in apis.items()}


def delta(before: Mapping[str, Counts], after: Mapping[str, Counts]) -> dict[str, Counts]:
    return {name: after[name] - before[name] for name in after}


def writes(counts: Counts) -> int:
    return sum(n for (verb, _, dry), n in counts.items() if verb in WRITE_VERBS and not dry)


class StandInController:
    """Marks every syncer-managed RedisCluster in the namespaces of ``prefix`` Ready for its current
    generation, as the embedded controller does once the pods run (none run in the bench)."""

    def __init__(self, apis: Mapping[str, ClusterClient], prefix: str) -> None:
        self.apis = apis
        self.prefix = prefix
        self.stop = threading.Event()
        self.marked = 0
        self._thread = threading.Thread(target=self._run, name="stand-in-controller", daemon=True)

    def __enter__(self) -> StandInController:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join()

    def _mark(self, api: ClusterClient, item: Mapping[str, Any]) -> None:
        meta = item["metadata"]
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "marked by the bench",
            "lastTransitionTime": now,
            "observedGeneration": meta["generation"],
        }
        body = {
            "apiVersion": API_VERSION,
            "kind": "RedisCluster",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "status": {"observedGeneration": meta["generation"], "conditions": [ready]},
        }
        api.apply_status(body, ApplyOptions(field_manager="bench-controller", force=True))

    def _run(self) -> None:
        with ThreadPoolExecutor(max_workers=8) as pool:
            while not self.stop.wait(0.3):
                for api in self.apis.values():
                    try:
                        items = api.list(
                            API_VERSION, "RedisCluster", label_selector=MANAGED_BY_SELECTOR
                        ).items
                    except KubeError:
                        continue
                    todo = [
                        i
                        for i in items
                        if i["metadata"]["namespace"].startswith(f"{self.prefix}-")
                        and (i.get("status") or {}).get("observedGeneration") != i["metadata"]["generation"]
                    ]
                    list(pool.map(lambda i, api=api: self._mark(api, i), todo))
                    self.marked += len(todo)


# -- the apply comparison ---------------------------------------------------------------------------


def syncer_apply(kubeconfig: Path, repo: Path, revision: str, options: ClientOptions) -> tuple[float, float]:
    """Seconds to render the repository, and to plan + apply it with a client of ``options``."""
    api = ClusterClient.from_kubeconfig(str(kubeconfig), APPLY_CLUSTER, options=options)
    try:
        started = time.perf_counter()
        desired = load_fleet(repo, revision).clusters[APPLY_CLUSTER]
        rendered = time.perf_counter()
        plan = plan_live_cluster(api, desired, DiffOptions(), Inventory.of(APPLY_CLUSTER, ()))
        result = ClusterApplier(api, ApplyPolicy()).apply(desired, plan, revision)
        done = time.perf_counter()
    finally:
        api.close()
    applied = sum(1 for e in result.entries if e.outcome is EntryOutcome.APPLIED)
    if not result.ok or applied != len(desired.manifests):
        raise RuntimeError(f"syncer applied {applied} of {len(desired.manifests)}: {result.error}")
    return rendered - started, done - rendered


def as_applied(repo: Path, folder: Path) -> Path:
    """The files of ``repo``'s cluster with the bodies syncer would send, so that kubectl asks the
    same of the server."""
    rendered = load_fleet(repo, "render").clusters[APPLY_CLUSTER].manifests
    by_key = {(m.key.kind, m.key.namespace, m.key.name): m for m in rendered}
    folder.mkdir()
    for path in sorted((repo / "clusters" / APPLY_CLUSTER).iterdir()):
        docs = list(yaml.safe_load_all(path.read_text()))
        keys = [(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs]
        (folder / path.name).write_text(yaml.safe_dump_all([applied_body(by_key[k]) for k in keys]))
    return folder


def kubectl_apply(kubeconfig: Path, folder: Path) -> float:
    argv = ["kubectl", "apply", "--server-side", "--field-manager=kubectl-bench", "-f", str(folder)]
    started = time.perf_counter()
    done = subprocess.run(
        [*argv, "--context", APPLY_CLUSTER, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"kubectl apply failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


CONTENDERS = ("syncer", "syncer-unthrottled", "kubectl", "parallel-ssa")
"""syncer with the agent's default client (50 requests/s, burst 100), the same without the client's
rate limit, kubectl, and the bare bodies applied 8 at a time with no plan (a yardstick of what the
apiserver sustains, not a tool)."""


def parallel_apply(kubeconfig: Path, folder: Path) -> float:
    """Seconds to apply the files' bodies 8 at a time (Namespaces first) with no plan and no limit."""
    docs = [d for path in sorted(folder.iterdir()) for d in yaml.safe_load_all(path.read_text())]
    batches = [[d for d in docs if d["kind"] == "Namespace"], [d for d in docs if d["kind"] != "Namespace"]]
    options = ClientOptions(qps=0, max_in_flight=8)
    api = ClusterClient.from_kubeconfig(str(kubeconfig), APPLY_CLUSTER, options=options)
    policy = ApplyOptions(field_manager="parallel-bench")
    try:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            for batch in batches:
                list(pool.map(lambda b: api.apply(b, policy), batch))
        return time.perf_counter() - started
    finally:
        api.close()


def compare_apply(kubeconfig: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    admin = ClusterClient.from_kubeconfig(str(kubeconfig), APPLY_CLUSTER, options=ClientOptions(qps=0))
    seconds: dict[str, list[float]] = {name: [] for name in (*CONTENDERS, "render")}
    same = True
    try:
        for run in range(args.runs):
            prefixes = {name: f"{name[0]}{name[-1]}{run}" for name in CONTENDERS}
            inputs: dict[str, Path] = {}
            for name in CONTENDERS:
                files = manifests(prefixes[name], args.objects)
                folder = f"clusters/{APPLY_CLUSTER}"
                inputs[name] = write_repo(root / f"{name}-{run}", [APPLY_CLUSTER], files, folder)
            for name in ("kubectl", "parallel-ssa"):
                inputs[name] = as_applied(inputs[name], root / f"{name}-{run}-applied")

            def by(name: str, run: int = run, inputs: dict[str, Path] = inputs) -> None:
                if name in ("kubectl", "parallel-ssa"):
                    tool = kubectl_apply if name == "kubectl" else parallel_apply
                    seconds[name].append(tool(kubeconfig, inputs[name]))
                    return
                options = ClientOptions() if name == "syncer" else ClientOptions(qps=0)
                render, apply = syncer_apply(kubeconfig, inputs[name], f"{name}-{run}", options)
                seconds["render"].append(render)
                seconds[name].append(apply)

            turn = run % len(CONTENDERS)  # who goes first changes every run
            order = CONTENDERS[turn:] + CONTENDERS[:turn]
            for name in order:
                by(name)
            live = {name: live_objects(admin, prefix) for name, prefix in prefixes.items()}
            if run == 0:
                print(f"  RedisClusters created: {', '.join(f'{n} {len(o)}' for n, o in live.items())}, e.g.")
                for key in sorted(live["syncer"])[:3]:
                    print(f"    {key[0]}/{key[1]}: {json.dumps(live['syncer'][key], sort_keys=True)}")
            agree = len(live["kubectl"]) == args.objects and all(o == live["kubectl"] for o in live.values())
            if not agree:
                same = False
                for name, objects in live.items():
                    only = sorted(set(objects) - set(live["kubectl"]))
                    missing = sorted(set(live["kubectl"]) - set(objects))
                    differ = [k for k in objects if k in live["kubectl"] and objects[k] != live["kubectl"][k]]
                    print(
                        f"  run {run}: {name}: extra {only[:5]}, missing {missing[:5]}, differ {differ[:5]}"
                    )
            times = ", ".join(f"{n} {seconds[n][-1]:.3f} s" for n in CONTENDERS)
            print(f"  run {run}: {times}; same objects and specs: {agree}")
            delete_namespaces(admin, [ns for p in prefixes.values() for ns in namespace_names(p)])
    finally:
        admin.close()
    return {name: statistics.median(values) for name, values in seconds.items()} | {"same": same}


# -- the agent: no-op requests and peak RSS ---------------------------------------------------------


def agent_options() -> RolloutOptions:
    gate = WaveGate(max_concurrent=len(CLUSTERS), health_timeout=60.0, bake=0.0)
    policy = RolloutPolicy((WavePolicy("all", 100.0, None, gate),), rollback=False)
    return RolloutOptions(rollout=policy, health_poll=0.5)


def peak_rss_kib() -> int:
    """This process's peak resident set (VmHWM) in KiB. Not ``ru_maxrss`` of the child as the parent
    sees it: Linux carries the RSS high-water mark of the image before ``exec`` into it, which for a
    child spawned by a big parent is the parent's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def agent_child(kubeconfig: str, repo: str) -> None:
    """The agent's work: clients for every cluster, a sync, the same sync again, a new revision of the
    same objects; one JSON line after each, a line on stdin before each repeat, and the peak RSS at
    the end. Without ``repo`` only the start-up: the imports and the clients."""
    clients = {name: ClusterClient.from_kubeconfig(kubeconfig, name) for name in CLUSTERS}
    rollout = FleetRollout(clients, agent_options(), hooks=RolloutHooks(fences=UNLEASED))
    for step, revision in enumerate(("rev-1", "rev-1", "rev-2") if repo else ()):
        if step:
            sys.stdin.readline()
        started = time.perf_counter()
        report = rollout.sync(load_fleet(Path(repo), revision))
        seconds = time.perf_counter() - started
        line = {
            "revision": revision,
            "outcome": str(report.outcome),
            "seconds": seconds,
            "message": report.message,
        }
        print(json.dumps(line), flush=True)
    for api in clients.values():
        api.close()
    print(json.dumps({"peak_rss_kib": peak_rss_kib()}), flush=True)


def _answer(stdout: IO[str]) -> dict[str, Any]:
    line = stdout.readline()
    if not line:
        raise RuntimeError("the agent process ended early")
    answer: dict[str, Any] = json.loads(line)
    return answer


def run_agent(kubeconfig: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    repo = write_repo(root / "agent-repo", CLUSTERS, manifests("agent", args.agent_objects), "base")
    apis = {
        n: ClusterClient.from_kubeconfig(str(kubeconfig), n, options=ClientOptions(qps=0)) for n in CLUSTERS
    }
    argv = [sys.executable, __file__, "--agent-child", str(kubeconfig), str(repo)]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        with StandInController(apis, "agent") as controller:
            first = _answer(child.stdout)
        print(
            f"  first sync: {first['outcome']} in {first['seconds']:.2f} s ({controller.marked} marked Ready)"
        )
        counted: list[tuple[dict[str, Any], dict[str, Counts]]] = []
        for _ in range(2):
            before = snapshot(apis)
            child.stdin.write("\n")
            child.stdin.flush()
            answer = _answer(child.stdout)
            counted.append((answer, delta(before, snapshot(apis))))
        child.stdin.close()
        peak = _answer(child.stdout)["peak_rss_kib"]
        if child.wait() != 0:
            raise RuntimeError(f"the agent process exited with {child.returncode}")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for api in apis.values():
            api.close()
    return {"first": first, "counted": counted, "rss_mib": peak / 1024, "start_mib": start_up_rss(kubeconfig)}


def start_up_rss(kubeconfig: Path) -> float:
    """Peak RSS in MiB of the agent child that only imports and creates its clients."""
    argv = [sys.executable, __file__, "--agent-child", str(kubeconfig), ""]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    kib: int = json.loads(done.stdout)["peak_rss_kib"]
    return kib / 1024


def print_requests(title: str, answer: Mapping[str, Any], counts: Mapping[str, Counts]) -> None:
    print(f"{title}: {answer['outcome']} in {answer['seconds']:.2f} s {answer['message']}".rstrip())
    heads = [c.replace("DELETECOLLECTION", "DELCOLL") for c in (*COLUMNS, "writes")]
    print("  " + f"{'cluster':<8}" + "".join(f"{c:>8}" for c in heads))
    for name, c in counts.items():
        cells = [sum(n for (v, _, d), n in c.items() if v == verb and not d) for verb in COLUMNS[:-1]]
        cells.append(sum(n for (_, _, d), n in c.items() if d))
        print("  " + f"{name:<8}" + "".join(f"{n:>8}" for n in (*cells, writes(c))))
    detail = sorted({(v, r, d) for c in counts.values() for (v, r, d), n in c.items() if n})
    if detail:
        parts = [f"{v}{' (dry run)' if d else ''} {r}" for v, r, d in detail]
        print(f"  requests by verb and resource: {', '.join(parts)}")


# -- the whole bench --------------------------------------------------------------------------------


def bench(root: Path, args: argparse.Namespace) -> bool:
    # kept out of the agent child, whose RSS is measured
    from devfleet import fleet as devfleet
    from devfleet.access import install_redis_crd

    started = time.perf_counter()
    state = devfleet.up(root / "fleet", devfleet.UpOptions(clusters=CLUSTERS), say=lambda m: None)
    try:
        kubeconfig = state.kubeconfig
        print(f"fleet of {len(CLUSTERS)} clusters up in {time.perf_counter() - started:.1f} s")
        for name in CLUSTERS:
            api = ClusterClient.from_kubeconfig(str(kubeconfig), name, options=ClientOptions(qps=0))
            try:
                install_redis_crd(api, field_manager="bench")
            finally:
                api.close()
        where = f"{NAMESPACES} namespaces on {APPLY_CLUSTER}"
        print(f"apply: {args.objects} RedisClusters in {where}, {args.runs} run(s)")
        applied = compare_apply(kubeconfig, root, args)
        print(f"agent: {len(CLUSTERS)} clusters x {args.agent_objects} RedisClusters")
        agent = run_agent(kubeconfig, root, args)
    finally:
        devfleet.down(root / "fleet", say=lambda m: None)

    (same_answer, same_counts), (new_answer, new_counts) = agent["counted"]
    print_requests("sync of the same revision again", same_answer, same_counts)
    print_requests("sync of a new revision with the same objects", new_answer, new_counts)
    ratio = applied["kubectl"] / applied["syncer"]
    unthrottled = applied["kubectl"] / applied["syncer-unthrottled"]
    bare = applied["kubectl"] / applied["parallel-ssa"]
    no_op_writes = sum(writes(c) for c in same_counts.values())
    new_writes = sum(writes(c) for c in new_counts.values())
    n = args.objects
    rows = [
        (f"syncer plan + apply of {n} (default client, median)", f"{applied['syncer']:.3f} s"),
        (f"syncer plan + apply of {n} (no rate limit, median)", f"{applied['syncer-unthrottled']:.3f} s"),
        ("syncer render of the repository (median)", f"{applied['render']:.3f} s"),
        ("kubectl apply --server-side (median)", f"{applied['kubectl']:.3f} s"),
        ("ratio kubectl / syncer (default client)", f"{ratio:.2f}x (goal >= {GOAL_RATIO:g}x)"),
        ("ratio kubectl / syncer (no rate limit)", f"{unthrottled:.2f}x"),
        ("bare SSA, 8 in flight, no plan (median)", f"{applied['parallel-ssa']:.3f} s"),
        ("ratio kubectl / bare SSA", f"{bare:.2f}x"),
        ("same objects and specs", str(applied["same"])),
        (f"first sync of {len(CLUSTERS)} x {args.agent_objects}", f"{agent['first']['seconds']:.2f} s"),
        ("writes, same revision again", f"{no_op_writes} (goal 0)"),
        ("writes, new revision, same objects", str(new_writes)),
        ("agent peak RSS", f"{agent['rss_mib']:.1f} MiB"),
        ("  of which start-up (imports, 3 clients)", f"{agent['start_mib']:.1f} MiB"),
    ]
    width = max(len(r[0]) for r in rows)
    print("\nsummary")
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    return applied["same"] and no_op_writes == 0 and ratio >= GOAL_RATIO


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--agent-child":
        agent_child(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--agent-objects", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="syncer-bench-apply-") as tmp:
        ok = bench(Path(tmp), args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
