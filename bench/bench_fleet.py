"""One revision rolled out in canary waves to fleets of 10, 30 and 100 light clusters by 1 and 2
sharded ``syncer run`` replicas: what each cluster costs, and whether that cost stays flat.

Run: ``python bench/bench_fleet.py [--sizes 10,30,100] [--replicas 1,2] [--objects 10]
[--profile light|full]``.

For each size a fleet is started; for each replica count, a fresh signed revision of ``--objects``
RedisClusters per cluster (and their Namespace) is pushed to a local bare repository and rolled out
by that many ``syncer run --shard-group`` processes in waves of 1 / 10 / 50 / 100 % (bake 0, 8 clusters
at a time).

* ``--profile light`` (the default; ``syncer-fleet up --profile light``: one kube-apiserver per
  cluster on a shared etcd). Light clusters run no controller: the **devfleet status stand-in** (a
  thread of this bench, not a controller) marks each RedisCluster Ready for its generation, so
  "healthy" means "the stand-in saw the generation", not that Redis runs.
* ``--profile full``: every cluster runs its controller manager, scheduler and kwok nodes, and the
  bench runs one real ``syncer controller`` process per cluster, so a RedisCluster turns Ready when
  the pods of its StatefulSets do (through kwok; no Redis runs, the controller's topology checks are
  off as on every kwok cluster). Since the controller manager, scheduler, kwok and the controllers
  also send requests, the agent's writes are counted from the apiservers' audit logs by the replicas'
  user agent, and its reads are not counted (the apiserver's counters cannot tell clients apart).

Measured per case:

* **time**: from the push to every replica having ended its pass with the revision applied (read from
  the replicas' ``syncer_sync_total``, so the bench sends the apiservers nothing while it waits);
* **requests**: from each apiserver's ``apiserver_request_total`` around the rollout, all resources and
  verbs except WATCH, the stand-in's status writes and the apiserver's own endpoint reconciler
  (Endpoints, EndpointSlices); Lease writes (the replicas' membership and owner Leases, renewed every
  retry period whatever the work, and each apiserver's own identity Lease, every 10 s) are shown
  apart;
* **peak RSS** (VmHWM) and **CPU seconds** (user + system) of each replica process, read from /proc
  just before it is stopped;
* **no-op pass**: once rolled out, the requests while every replica runs at least one more pass; the
  goal is 0 writes other than Lease renewals.

Goals (exit 1 when one is missed): per-cluster time and requests at the largest size within 1.5x of
those at the smallest; peak RSS of a replica <= 150 MiB at the largest size; 0 writes in the no-op pass.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from devfleet import audit, storage
from devfleet import fleet as devfleet
from devfleet.access import install_redis_crd
from devfleet.cpu import cpu_seconds
from devfleet.memory import status_kib
from devfleet.nodes import admin_client
from devfleet.standin import ReadyStatusStandIn
from syncer.agent.sharding import user_agent
from syncer.domain.sync_state import SyncPhase
from syncer.errors import KubeError
from syncer.kube import ClusterClient
from syncer.status.state_store import StateStore

WRITE_VERBS = {"APPLY", "PATCH", "POST", "PUT", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE"}
NOT_SYNCER = {"", "endpoints", "endpointslices"}
"""Requests the apiserver makes to itself (its endpoint reconciler), not syncer's: left out."""
TIME_RATIO_GOAL = REQUEST_RATIO_GOAL = 1.5
RSS_GOAL_MIB = 150.0
WAVES = {
    "waves": [
        {"name": "w1", "percent": 1},
        {"name": "w10", "percent": 10},
        {"name": "w50", "percent": 50},
        {"name": "all", "percent": 100},
    ],
    "defaults": {"maxConcurrent": 8, "healthTimeout": "900s", "bake": "0s"},
    "rollback": False,
}
INTERVAL = 5  # seconds between polls of each replica
LEASE = ("30s", "15s", "3s")  # duration, renew deadline, retry period


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- git ------------------------------------------------------------------------------------------


class Repo:
    """A bare remote, a working copy committing as one SSH signer, and the trust policy for it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        home = root / "home"
        home.mkdir(parents=True)
        (home / "gitconfig").write_text("")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
            "GIT_AUTHOR_NAME": "Bench",
            "GIT_AUTHOR_EMAIL": "bench@example.org",
            "GIT_COMMITTER_NAME": "Bench",
            "GIT_COMMITTER_EMAIL": "bench@example.org",
        }
        self.key = root / "signer"
        self._run(
            "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench@example.org", "-f", str(self.key)
        )
        public = Path(f"{self.key}.pub").read_text().strip()
        policy = {"mode": "head", "signers": [{"name": "bench", "ssh": public}], "openpgpKeys": []}
        (root / "trust.yaml").write_text(yaml.safe_dump(policy))
        self.remote = root / "remote.git"
        self.work = root / "work"
        self._run("git", "init", "-q", "--bare", "-b", "main", str(self.remote))
        self._run("git", "init", "-q", "-b", "main", str(self.work))

    def _run(self, *argv: str) -> None:
        subprocess.run(argv, env=self.env, cwd=self.root, check=True, capture_output=True, timeout=120)

    def push(self, files: Mapping[str, str], message: str) -> None:
        for name, text in files.items():
            (self.work / name).parent.mkdir(parents=True, exist_ok=True)
            (self.work / name).write_text(text)
        git = ["git", "-C", str(self.work)]
        self._run(*git, "add", "-A")
        self._run(
            *git,
            "-c",
            "gpg.format=ssh",
            "-c",
            f"user.signingkey={self.key}",
            "commit",
            "-q",
            "-S",
            "-m",
            message,
        )
        self._run(*git, "push", "-q", str(self.remote), "main")


def fleet_files(clusters: Sequence[str], namespace: str, objects: int) -> dict[str, str]:
    fleet = {
        "apiVersion": "syncer.dev/v1alpha1",
        "kind": "Fleet",
        "defaults": {"namespace": namespace},
        "clusters": [{"name": n} for n in clusters],
    }
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    docs += [
        {
            "apiVersion": "redis.syncer.dev/v1alpha1",
            "kind": "RedisCluster",
            "metadata": {"name": f"cache-{i}", "namespace": namespace},
            "spec": {"version": "7.2.5", "shards": 3, "replicasPerShard": 1},
        }
        for i in range(objects)
    ]
    return {"fleet.yaml": yaml.safe_dump(fleet), "base/objects.yaml": yaml.safe_dump_all(docs)}


# -- apiserver request counts ----------------------------------------------------------------------

Counts = Counter[tuple[str, str]]
"""apiserver_request_total by (verb, resource), WATCH and status writes left out."""


_LABEL = re.compile(r'(\w+)="([^"]*)"')


def request_counts(api: ClusterClient) -> Counts:
    """The apiserver's request counters, read from the lines of ``apiserver_request_total`` alone (a
    whole parse of an apiserver's /metrics takes seconds on a busy machine, and the replicas keep
    working meanwhile)."""
    counts: Counts = Counter()
    for line in api.get_text("/metrics").splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        head, _, value = line.rpartition(" ")
        labels = dict(_LABEL.findall(head))
        if labels.get("verb") == "WATCH" or labels.get("subresource") == "status":
            continue
        if labels.get("resource", "") in NOT_SYNCER:
            continue
        counts[(labels["verb"], labels["resource"])] += int(float(value))
    return counts


def snapshot(apis: Mapping[str, ClusterClient]) -> dict[str, Counts]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(zip(apis, pool.map(request_counts, apis.values()), strict=True))


@dataclass(frozen=True)
class Requests:
    """Requests of a window, summed over clusters: reads and writes, Lease writes apart. ``reads`` is
    ``None`` where the agent's reads cannot be told from other clients' (full clusters)."""

    reads: int | None
    writes: int
    lease_writes: int
    written: tuple[tuple[str, int], ...] = ()
    """The writes other than Leases, by verb and resource."""

    @staticmethod
    def between(before: Mapping[str, Counts], after: Mapping[str, Counts]) -> Requests:
        reads = writes = leases = 0
        written: Counter[str] = Counter()
        for name in after:
            for (verb, resource), count in (after[name] - before[name]).items():
                if verb in WRITE_VERBS:
                    if resource == "leases":
                        leases += count
                    else:
                        writes += count
                        written[f"{verb} {resource}"] += count
                elif resource != "leases":
                    reads += count
        return Requests(reads, writes, leases, tuple(sorted(written.items())))

    @staticmethod
    def audited(fleet: devfleet.Fleet, clusters: Sequence[str], start: datetime, end: datetime) -> Requests:
        """The replicas' writes between ``start`` and ``end`` as the apiservers audited them (only the
        accepted ones: a fenced or refused request changed nothing)."""
        prefix = user_agent("").rpartition("/")[0] + "/"
        writes = leases = 0
        written: Counter[str] = Counter()
        for name in clusters:
            for w in audit.writes(fleet, name):
                if not (start <= w.at < end and w.user_agent.startswith(prefix) and w.code < 400):
                    continue
                if w.resource == "leases":
                    leases += 1
                    continue
                writes += 1
                verb = {"patch": "APPLY", "create": "POST", "update": "PUT"}.get(w.verb, w.verb.upper())
                written[f"{verb} {w.resource}{'/' + w.subresource if w.subresource else ''}"] += 1
        return Requests(None, writes, leases, tuple(sorted(written.items())))


def now() -> datetime:
    return datetime.now(UTC)


# -- replicas ---------------------------------------------------------------------------------------


class Replica:
    """One ``syncer run --shard-group`` process."""

    def __init__(self, identity: str, args: list[str], workdir: Path, sharded: bool = True) -> None:
        self.identity = identity
        self.stderr = workdir / f"{identity}.stderr"
        shard = ["--shard-identity", identity] if sharded else []
        with self.stderr.open("wb") as err:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "syncer", "run", *args, *shard],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=workdir,
                start_new_session=True,
            )
        self.port = 0

    def announced_port(self, timeout: float = 120) -> int:
        marker = "on port "
        deadline = time.monotonic() + timeout
        while not self.port:
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.identity} exited: {self.stderr.read_text()[-2000:]}")
            for line in self.stderr.read_text(errors="replace").splitlines():
                if "serving /metrics" in line and marker in line:
                    self.port = int(line.split(marker, 1)[1].split('"')[0].split()[0])
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.identity} never announced its port")
            time.sleep(0.2)
        return self.port

    def syncs(self) -> Counter[str]:
        """``syncer_sync_total`` by result."""
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.announced_port()}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        found: Counter[str] = Counter()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "syncer_sync_total":
                    found[sample.labels["result"]] += int(sample.value)
        return found

    def usage(self) -> tuple[float, float]:
        """Peak RSS (MiB) and CPU seconds so far."""
        return status_kib(self.popen.pid, "VmHWM") / 1024, cpu_seconds(self.popen.pid)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()


def provision_volumes(fleet: devfleet.Fleet, cluster: str, volumes: int) -> None:
    with admin_client(fleet.kubeconfig, cluster) as api_client:
        storage.provision(api_client, volumes)


class Controllers:
    """One real ``syncer controller`` process per full cluster, for the fleet's lifetime."""

    def __init__(self, fleet: devfleet.Fleet, clusters: Sequence[str], workdir: Path) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        for name in clusters:
            with (workdir / f"controller-{name}.stderr").open("wb") as err:
                argv = [sys.executable, "-m", "syncer", "controller", "--kubeconfig", str(fleet.kubeconfig)]
                argv += ["--context", name, "--no-leader-elect", "--metrics-port", "0"]
                self.procs.append(
                    subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        start_new_session=True,
                    )
                )

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def wait_for(what: str, probe: Any, timeout: float, every: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(every)


# -- one case ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    clusters: int
    replicas: int
    seconds: float
    rollout: Requests
    noop: Requests
    noop_passes: int
    peak_rss_mib: tuple[float, ...]
    cpu_seconds: tuple[float, ...]


def run_case(
    fleet: devfleet.Fleet,
    apis: Mapping[str, ClusterClient],
    replicas: int,
    objects: int,
    root: Path,
    *,
    full: bool,
) -> Case:
    clusters = tuple(apis)
    tag = uuid.uuid4().hex[:6]
    namespace, state_ns = f"bf-{tag}", f"bf-{tag}-state"
    repo = Repo(root / f"repo-{tag}")
    (root / f"waves-{tag}.yaml").write_text(yaml.safe_dump(WAVES))
    config = {
        "source": {"url": str(repo.remote), "cacheDir": str(root / f"cache-{tag}"), "timeoutSeconds": 120},
        "trustPolicy": str(repo.root / "trust.yaml"),
        "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in clusters},
    }
    (root / f"agent-{tag}.yaml").write_text(yaml.safe_dump(config))
    args = [
        "--config", str(root / f"agent-{tag}.yaml"),
        "--rollout-policy", str(root / f"waves-{tag}.yaml"),
        "--kubeconfig", str(fleet.kubeconfig),
        "--state-namespace", state_ns,
        "--interval", f"{INTERVAL}s",
        "--jitter", "0s",
        "--drift-interval", "1h",
        "--http-port", "0",
        "--probe-port", "0",
        "--shard-group", f"bench-{tag}",
        "--lease-context", clusters[0],
        "--lease-namespace", f"{namespace}-members",
        "--lease-duration", LEASE[0],
        "--lease-renew-deadline", LEASE[1],
        "--lease-retry-period", LEASE[2],
    ]  # fmt: skip
    procs = [Replica(f"r{i}", args, root) for i in range(replicas)]
    try:
        for proc in procs:
            proc.announced_port()
        # Every replica has joined and every cluster has an owner before the push.
        holders = {}

        def settled() -> bool:
            for name, api in apis.items():
                try:
                    lease = api.get("coordination.k8s.io/v1", "Lease", "syncer-owner", state_ns)
                    holders[name] = str(lease["spec"].get("holderIdentity") or "")
                except KubeError:
                    return False
            return set(holders.values()) == {p.identity for p in procs}

        wait_for("every cluster owned, by every replica", settled, 600, every=2)
        # On full clusters the controllers, running for the fleet's lifetime, make RedisClusters Ready.
        ready = contextlib.nullcontext() if full else ReadyStatusStandIn(fleet.kubeconfig, clusters)
        with ready:
            before, pushed = snapshot(apis), now()
            started = time.monotonic()
            repo.push(fleet_files(clusters, namespace, objects), "caches")
            wait_for(
                "every replica's pass to apply the revision",
                lambda: all(p.syncs()["applied"] >= 1 for p in procs),
                3600,
            )
            seconds = time.monotonic() - started
            after, finished = snapshot(apis), now()
            log(f"  counters read {time.monotonic() - started - seconds:.1f} s after the rollout ended")
            passes = [p.syncs()["unchanged"] for p in procs]
            wait_for(
                "two more passes of every replica",
                lambda: all(p.syncs()["unchanged"] >= n + 2 for p, n in zip(procs, passes, strict=True)),
                600,
            )
            idle, ended = snapshot(apis), now()
            noop_passes = sum(p.syncs()["unchanged"] for p in procs) - sum(passes)
        usage = [p.usage() for p in procs]
    finally:
        for proc in procs:
            proc.stop()
    states = [StateStore(api, state_ns).load().state for api in apis.values()]
    done = sum(1 for s in states if s.revision and s.phase is SyncPhase.HEALTHY)
    if done != len(clusters):
        raise RuntimeError(f"only {done} of {len(clusters)} clusters recorded healthy")
    for api in apis.values():
        for ns in (namespace, state_ns, f"{namespace}-members"):
            with contextlib.suppress(KubeError):  # the fleet is about to go anyway
                api.delete("v1", "Namespace", ns)
    if full:
        rollout = Requests.audited(fleet, clusters, pushed, finished)
        noop = Requests.audited(fleet, clusters, finished, ended)
    else:
        rollout, noop = Requests.between(before, after), Requests.between(after, idle)
    return Case(
        len(clusters),
        replicas,
        seconds,
        rollout,
        noop,
        noop_passes,
        tuple(u[0] for u in usage),
        tuple(u[1] for u in usage),
    )


# -- the report --------------------------------------------------------------------------------------


def table(cases: Sequence[Case]) -> str:
    head = (
        "| clusters | replicas | push to all healthy | per cluster | requests / cluster (writes) | "
        "lease writes / cluster | peak RSS / replica | CPU s / replica | CPU s / cluster | no-op passes | "
        "no-op writes | no-op reads / cluster / pass |"
    )
    rows = [head, "|" + " --- |" * 12]
    for c in cases:
        n = c.clusters
        if c.rollout.reads is None or c.noop.reads is None:
            reqs, noop_reads = "writes only:", "not counted"
        else:
            reqs = f"{(c.rollout.reads + c.rollout.writes) / n:.1f}"
            noop_reads = f"{c.noop.reads / n / max(c.noop_passes / c.replicas, 1):.1f}"
        rows.append(
            f"| {n} | {c.replicas} | {c.seconds:.1f} s | {c.seconds / n:.2f} s | {reqs} "
            f"({c.rollout.writes / n:.1f}) | {c.rollout.lease_writes / n:.1f} | "
            f"{' / '.join(f'{r:.0f}' for r in c.peak_rss_mib)} MiB | "
            f"{' / '.join(f'{s:.1f}' for s in c.cpu_seconds)} | {sum(c.cpu_seconds) / n:.2f} | "
            f"{c.noop_passes} | {c.noop.writes} | {noop_reads} |"
        )
    return "\n".join(rows)


def ratios(cases: Sequence[Case]) -> tuple[list[str], bool]:
    lines, ok = [], True
    for replicas in sorted({c.replicas for c in cases}):
        mine = sorted((c for c in cases if c.replicas == replicas), key=lambda c: c.clusters)
        if len(mine) < 2:
            continue
        small, large = mine[0], mine[-1]
        time_ratio = (large.seconds / large.clusters) / (small.seconds / small.clusters)
        req = [((c.rollout.reads or 0) + c.rollout.writes) / c.clusters for c in (small, large)]
        req_ratio = req[1] / req[0]
        rss = max(large.peak_rss_mib)
        met = time_ratio <= TIME_RATIO_GOAL and req_ratio <= REQUEST_RATIO_GOAL and rss <= RSS_GOAL_MIB
        ok = ok and met
        lines.append(
            f"{replicas} replica(s), {large.clusters} vs {small.clusters} clusters: time per cluster "
            f"{time_ratio:.2f}x, requests per cluster {req_ratio:.2f}x (goal <= 1.5x each); peak RSS "
            f"{rss:.0f} MiB at {large.clusters} (goal <= {RSS_GOAL_MIB:.0f}) -> {'met' if met else 'NOT met'}"
        )
    return lines, ok


def run_size(
    root: Path, size: int, profile: devfleet.Profile, counts: Sequence[int], objects: int
) -> list[Case]:
    """Start a fleet of ``size`` clusters, run one case per replica count on it, stop it."""
    full = profile is devfleet.Profile.FULL
    names = devfleet.cluster_names(size, "bf")
    state = root / f"fleet-{size}"
    log(f"starting {size} {profile} clusters ...")
    began = time.monotonic()
    fleet = devfleet.up(
        state,
        devfleet.UpOptions(clusters=names, profile=profile, timeout=300.0 + 30.0 * size, audit=full),
        log,
    )
    log(f"{size} {profile} clusters up in {time.monotonic() - began:.0f} s")
    apis = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in names}
    controllers = None
    cases = []
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda a: install_redis_crd(a, field_manager="bench"), apis.values()))
        if full:
            # Each RedisCluster's 6 pods claim a volume each, and a claimed volume is not reused:
            # every case needs a pool of its own.
            volumes = 6 * objects * len(counts) + 8
            with ThreadPoolExecutor(max_workers=4) as pool:
                list(pool.map(provision_volumes, [fleet] * len(names), names, [volumes] * len(names)))
            controllers = Controllers(fleet, names, root)
        for replicas in counts:
            log(f"{size} clusters, {replicas} replica(s) ...")
            case = run_case(fleet, apis, replicas, objects, root, full=full)
            log(f"  {case}")
            cases.append(case)
    finally:
        if controllers:
            controllers.stop()
        for api in apis.values():
            api.close()
        devfleet.down(state, log)
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,30,100")
    parser.add_argument("--replicas", default="1,2")
    parser.add_argument("--objects", type=int, default=10)
    parser.add_argument("--profile", choices=["light", "full"], default="light")
    opts = parser.parse_args()
    profile = devfleet.Profile(opts.profile)
    full = profile is devfleet.Profile.FULL
    counts = [int(r) for r in opts.replicas.split(",")]
    # A bench started in the background ignores SIGINT: let SIGTERM stop it through its clean-ups too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    log(f"load before: {os.getloadavg()}")
    cases: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        for size in (int(s) for s in opts.sizes.split(",")):
            cases += run_size(Path(tmp), size, profile, counts, opts.objects)
    ready_by = (
        "made Ready by a real syncer controller per cluster (pods Ready through kwok); requests: the "
        "replicas' writes from the audit logs, reads not counted"
        if full
        else "marked Ready by the devfleet STATUS STAND-IN (no controller, no pods on light clusters)"
    )
    print(
        f"One revision ({opts.objects} RedisClusters + 1 Namespace per cluster), "
        f"waves 1/10/50/100 %, bake 0, {INTERVAL} s poll, {profile} clusters; RedisClusters {ready_by}."
    )
    print(table(cases))
    lines, ok = ratios(cases)
    for line in lines:
        print(line)
    noop_ok = all(c.noop.writes == 0 for c in cases)
    print(f"no-op passes: {sum(c.noop.writes for c in cases)} writes besides Lease renewals (goal 0)")
    for c in cases:
        if c.noop.written:
            print(f"  {c.clusters} clusters, {c.replicas} replica(s): {dict(c.noop.written)}")
    print(f"load after: {os.getloadavg()}")
    return 0 if ok and noop_ok else 1


if __name__ == "__main__":
    sys.exit(main())
