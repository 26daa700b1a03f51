"""Bring a local fleet of clusters up and down, and describe what runs.

A fleet lives in one state directory (see ``devfleet.state``). Its clusters are ``full`` (apiserver,
controller manager, scheduler, kwok nodes) or ``light`` (a kube-apiserver trimmed for memory, nothing
else): see ``devfleet.components.Profile``.
"""

from __future__ import annotations

import functools
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from devfleet import components, kubeconfig, pki, podrange, probe, procs
from devfleet.build import cache_root, ensure_binaries
from devfleet.components import Profile
from devfleet.probe import tail
from devfleet.state import ADMIN_USER, CLUSTER_COMPONENTS, STOP_GRACE, Cluster, Fleet, Say, locked

__all__ = [
    "CLUSTER_COMPONENTS",
    "DEFAULT_CLUSTERS",
    "NODES_PER_CLUSTER",
    "STOP_GRACE",
    "Cluster",
    "Fleet",
    "Profile",
    "UpOptions",
    "cluster_names",
    "default_state_dir",
    "down",
    "locked",
    "start_component",
    "status",
    "stop_component",
    "tail",
    "up",
]

DEFAULT_CLUSTERS = ("canary", "eu-1", "us-1")
REDIS_PODS = "redis-pods"  # the recorded name of devfleet.redispods' process (redispods.NAME)
NODES_PER_CLUSTER = 2
# How often a component is started again on a new port when another process took its port first.
PORT_ATTEMPTS = 3


def default_state_dir(name: str = "default") -> Path:
    return cache_root() / "fleet" / name


def cluster_names(count: int, prefix: str = "c") -> tuple[str, ...]:
    """``count`` cluster names ``<prefix>-01`` ... (zero-padded to the width of ``count``, at least 2)."""
    if count < 1:
        raise ValueError(f"a fleet needs at least one cluster, not {count}")
    width = max(2, len(str(count)))
    return tuple(f"{prefix}-{index:0{width}d}" for index in range(1, count + 1))


@dataclass(frozen=True)
class UpOptions:
    """How a fleet is started.

    ``profile`` applies to every cluster. ``pod_cidr`` is where kwok takes pod IPs from (full
    clusters). ``loopback_pods`` instead claims a loopback /16 for this fleet alone
    (``devfleet.podrange``), so every pod IP is a loopback address of this machine that no other fleet
    hands out, and a test can run a real server "in" a pod by listening there; the claim is held by
    the fleet's etcd and released by ``down``. ``start_window`` bounds the kube-apiservers starting
    at once (their start-up is CPU-heavy). ``timeout`` is for the whole fleet; ``None`` allows 180
    seconds plus 15 per cluster (start-up is slow on a busy machine). ``audit`` makes every apiserver
    log each write request (user, user agent, object, time) to ``<cluster>/logs/audit.jsonl``.
    ``redis`` runs a real redis-server (and the exporter sidecar's redis_exporter) behind every Redis
    pod of the full clusters (``devfleet.redispods``); it implies ``loopback_pods``."""

    clusters: tuple[str, ...] = DEFAULT_CLUSTERS
    nodes: int = NODES_PER_CLUSTER
    timeout: float | None = None
    pod_cidr: str = components.POD_CIDR
    profile: Profile = Profile.FULL
    start_window: int = 4
    audit: bool = False
    loopback_pods: bool = False
    redis: bool = False

    def seconds(self) -> float:
        return self.timeout if self.timeout is not None else 180.0 + 15.0 * len(self.clusters)


def up(root: Path, options: UpOptions = UpOptions(), say: Say = print) -> Fleet:
    """Start a fleet in ``root``; if one already runs there whole, return it as it is."""
    if len(set(options.clusters)) != len(options.clusters) or not options.clusters:
        raise ValueError(f"cluster names must be given and unique: {', '.join(options.clusters)}")
    with locked(root):
        existing = Fleet.load(root)
        if existing is not None:
            if len(existing.live()) == len(existing.processes):
                _refuse_what_it_lacks(existing, options)
                say(f"fleet at {root} is already up")
                return existing
            say(f"fleet at {root} is partly down: stopping what remains and starting afresh")
            _down(root, say)
        bin_dir = ensure_binaries(say)
        started = time.monotonic()
        deadline = started + options.seconds()
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        ports: set[int] = set()
        fleet = Fleet(
            root,
            [Cluster(n, probe.free_port(ports), root / n, options.profile) for n in options.clusters],
            [],
            probe.free_port(ports),
        )
        try:
            _start(fleet, bin_dir, options, deadline, say)
        except BaseException:
            fleet.save()
            _down(root, say)
            raise
    names = ", ".join(c.name for c in fleet.clusters)
    say(f"fleet up in {time.monotonic() - started:.1f}s ({options.profile}): {names}")
    return fleet


def _refuse_what_it_lacks(existing: Fleet, options: UpOptions) -> None:
    """A fleet already up is returned as it is only when it runs what ``options`` ask for: pod IPs of
    its own and real Redis behind its pods are chosen when it starts, and cannot be added to it."""
    asked = "--redis" if options.redis else "--loopback-pods" if options.loopback_pods else ""
    lacks = (options.redis and not any(p.name == REDIS_PODS for p in existing.processes)) or (
        options.loopback_pods and existing.pod_range is None
    )
    if lacks:
        raise ValueError(
            f"the fleet at {existing.root} is up without {asked}, which only a fleet starting can take "
            f"(its pods' IPs are chosen then): run `syncer-fleet down`, then `syncer-fleet up {asked}`"
        )


def _issue_pki(cluster: Cluster) -> None:
    files = cluster.files
    files.pki.mkdir(parents=True, exist_ok=True)
    (cluster.root / "logs").mkdir(exist_ok=True)
    ca = pki.CertificateAuthority.create(files.pki, f"{cluster.name}-ca")
    ca.issue(
        files.pki / "apiserver",
        "kube-apiserver",
        server_ips=("127.0.0.1",),
        server_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
    )
    ca.issue(files.pki / "admin", ADMIN_USER, organizations=("system:masters",))
    pki.write_service_account_keys(files.pki)
    files.audit_policy.write_text(components.AUDIT_POLICY)


# The identity each component of a full cluster authenticates as; kwok stands in for every kubelet and
# needs node and pod status rights across the cluster.
_IDENTITIES = {
    "kube-controller-manager": ("system:kube-controller-manager", ()),
    "kube-scheduler": ("system:kube-scheduler", ()),
    "kwok": ("kwok-controller", ("system:masters",)),
}


def _component_kubeconfigs(cluster: Cluster) -> None:
    """Kubeconfigs of a full cluster's own components (written once the apiserver's port is final)."""
    files = cluster.files
    for component, (user, groups) in _IDENTITIES.items():
        pair = cluster.ca.issue(files.pki / component, user, organizations=groups)
        doc = kubeconfig.render(
            [(cluster.endpoint, user, kubeconfig.Credentials(cert=pair.cert, key=pair.key))], cluster.name
        )
        kubeconfig.write(files.kubeconfig(component), doc)


def _start_etcd(fleet: Fleet, bin_dir: Path, deadline: float, say: Say) -> None:
    say("starting etcd")
    for attempt in range(1, PORT_ATTEMPTS + 1):
        argv = components.etcd_argv(bin_dir, fleet.root / "etcd-data", fleet.etcd_port, probe.free_port())
        etcd = procs.spawn("etcd", argv, fleet.root / "etcd.log", fleet.root)
        fleet.processes.append(etcd)
        fleet.save()
        url = f"http://127.0.0.1:{fleet.etcd_port}/health"
        try:
            probe.wait("etcd health", functools.partial(probe.answers_ok, url, None), deadline, etcd)
            return
        except probe.Exited as exited:
            if attempt == PORT_ATTEMPTS or not probe.port_taken(exited.log):
                raise
            fleet.processes.remove(etcd)
            shutil.rmtree(fleet.root / "etcd-data", ignore_errors=True)
            fleet.etcd_port = probe.free_port({c.port for c in fleet.clusters})


def _spawn_apiserver(fleet: Fleet, bin_dir: Path, cluster: Cluster, audit: bool) -> procs.Proc:
    argv = components.apiserver_argv(
        bin_dir,
        cluster.files,
        cluster.port,
        fleet.etcd_port,
        cluster.name,
        light=cluster.profile is Profile.LIGHT,
        audit=audit,
    )
    env = components.LIGHT_ENV if cluster.profile is Profile.LIGHT else None
    proc = procs.spawn("kube-apiserver", argv, cluster.files.log("kube-apiserver"), cluster.root, env)
    fleet.processes.append(proc)
    fleet.save()
    return proc


def _start_apiservers(fleet: Fleet, bin_dir: Path, options: UpOptions, deadline: float, say: Say) -> None:
    """Start every cluster's kube-apiserver, at most ``start_window`` of them starting at once, and wait
    until each answers /readyz. One that finds its port taken meanwhile is started on another."""
    say(f"starting {len(fleet.clusters)} kube-apiservers, {options.start_window} at a time")
    pending = list(range(len(fleet.clusters)))
    starting: dict[int, tuple[procs.Proc, int]] = {}
    checks = {}
    while pending or starting:
        while pending and len(starting) < max(1, options.start_window):
            index = pending.pop(0)
            starting[index] = (_spawn_apiserver(fleet, bin_dir, fleet.clusters[index], options.audit), 1)
            checks[index] = fleet.clusters[index].readyz()
        for index, (proc, attempt) in list(starting.items()):
            cluster = fleet.clusters[index]
            if checks[index]():
                del starting[index]
            elif not proc.alive():
                log = probe.tail(Path(proc.log))
                if attempt == PORT_ATTEMPTS or not probe.port_taken(log):
                    raise probe.Exited(f"{cluster.name} kube-apiserver /readyz", proc, log)
                fleet.processes.remove(proc)
                taken = {c.port for c in fleet.clusters} | {fleet.etcd_port}
                fleet.clusters[index] = cluster = replace(cluster, port=probe.free_port(taken))
                starting[index] = (_spawn_apiserver(fleet, bin_dir, cluster, options.audit), attempt + 1)
                checks[index] = cluster.readyz()
        if time.monotonic() > deadline:
            names = ", ".join(fleet.clusters[i].name for i in [*starting, *pending])
            raise TimeoutError(f"timed out waiting for the kube-apiservers of {names}")
        if starting:
            time.sleep(0.2)
    fleet.save()
    fleet.write_kubeconfig()


def _start(fleet: Fleet, bin_dir: Path, options: UpOptions, deadline: float, say: Say) -> None:
    for cluster in fleet.clusters:
        _issue_pki(cluster)
    _start_etcd(fleet, bin_dir, deadline, say)
    if options.loopback_pods or options.redis:
        etcd = next(p for p in fleet.processes if p.name == "etcd")
        fleet.pod_range = podrange.claim(owner=etcd.pid)
        fleet.save()
        say(f"pods get loopback IPs from {fleet.pod_range.network}")
    _start_apiservers(fleet, bin_dir, options, deadline, say)
    _start_full_components(fleet, bin_dir, options, deadline, say)


def _start_full_components(
    fleet: Fleet, bin_dir: Path, options: UpOptions, deadline: float, say: Say
) -> None:
    """The controller manager, scheduler and kwok of every full cluster; then its kwok nodes."""
    from devfleet import kwok_stages, nodes

    full = [c for c in fleet.clusters if c.profile is Profile.FULL]
    if not full:
        return
    say("starting controller managers, schedulers and kwok")
    for index, c in enumerate(full):
        # With a loopback range each cluster takes its own part of it: no two pods share an IP.
        pod_cidr = options.pod_cidr if fleet.pod_range is None else fleet.pod_range.cidr_of(index, len(full))
        _component_kubeconfigs(c)
        for name, argv in (
            ("kube-controller-manager", components.controller_manager_argv(bin_dir, c.files)),
            ("kube-scheduler", components.scheduler_argv(bin_dir, c.files)),
            (
                "kwok",
                components.kwok_argv(
                    bin_dir, c.files, kwok_stages.write(c.root / "kwok-stages.yaml"), pod_cidr
                ),
            ),
        ):
            fleet.processes.append(procs.spawn(name, argv, c.files.log(name), c.root))
    fleet.save()
    say(f"registering {options.nodes} kwok nodes per cluster and waiting for them to be Ready")
    with ThreadPoolExecutor(max_workers=min(len(full), 8)) as pool:
        waits = [pool.submit(nodes.prepare, fleet.kubeconfig, c.name, options.nodes, deadline) for c in full]
        for w in waits:
            w.result()
    if options.redis:
        say("starting a real redis-server behind every Redis pod (and its exporter)")
        for c in full:
            argv = [sys.executable, "-m", "devfleet.redispods", str(fleet.root), c.name]
            fleet.processes.append(procs.spawn(REDIS_PODS, argv, c.files.log(REDIS_PODS), c.root))
        fleet.save()


def down(root: Path, say: Say = print) -> list[procs.Proc]:
    """Stop exactly the processes the fleet in ``root`` started and remove its state; return survivors."""
    with locked(root):
        return _down(root, say)


def _down(root: Path, say: Say) -> list[procs.Proc]:
    fleet = Fleet.load(root)
    if fleet is None:
        if root.exists():
            shutil.rmtree(root)
        say(f"no fleet at {root}")
        return []
    # Stop the components before the apiservers and those before etcd, so nothing logs a storm of errors.
    order = {"kwok": 0, "kube-scheduler": 0, "kube-controller-manager": 0, "kube-apiserver": 1, "etcd": 2}
    survivors: list[procs.Proc] = []
    for rank in sorted(set(order.values())):
        survivors += procs.stop([p for p in fleet.processes if order.get(p.name, 0) == rank])
    if survivors:
        say("could not stop: " + ", ".join(f"{p.name} (pid {p.pid})" for p in survivors))
        return survivors
    if fleet.pod_range is not None:
        podrange.release(fleet.pod_range)
    shutil.rmtree(root)
    say(f"fleet at {root} is down")
    return []


def status(root: Path) -> list[tuple[str, str, int, bool]]:
    """(cluster or '-', component, pid, alive) for every process the fleet started."""
    fleet = Fleet.load(root)
    if fleet is None:
        return []
    return [(fleet.cluster_of(p), p.name, p.pid, p.alive()) for p in fleet.processes]


def _loaded(root: Path) -> Fleet:
    fleet = Fleet.load(root)
    if fleet is None:
        raise FileNotFoundError(f"no fleet at {root}")
    return fleet


def stop_component(
    root: Path, cluster: str, name: str, say: Say = print, grace: float = STOP_GRACE
) -> procs.Proc:
    """Stop one cluster's component of the fleet in ``root``; see ``Fleet.stop_component``."""
    return _loaded(root).stop_component(cluster, name, say, grace)


def start_component(
    root: Path, cluster: str, name: str, say: Say = print, timeout: float = 60.0
) -> procs.Proc:
    """Start one cluster's stopped component of the fleet in ``root`` again; see
    ``Fleet.start_component``."""
    return _loaded(root).start_component(cluster, name, say, timeout)
