"""Bring a local fleet of clusters up and down, and describe what runs.

A fleet lives in one state directory: ``fleet.json`` (clusters, ports and the processes started, by PID
and start time), ``kubeconfig`` (one admin context per cluster), each cluster's PKI and component logs.
"""

from __future__ import annotations

import functools
import json
import shutil
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet import components, kubeconfig, pki, podrange, procs
from devfleet.build import cache_root, ensure_binaries

DEFAULT_CLUSTERS = ("canary", "eu-1", "us-1")
# The processes each cluster runs of its own (etcd is shared by the fleet).
CLUSTER_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
# Seconds a component stopped alone gets to exit after SIGTERM before it is killed.
STOP_GRACE = 2.0
ADMIN_USER = "fleet-admin"
NODES_PER_CLUSTER = 2

Say = Callable[[str], None]


def default_state_dir(name: str = "default") -> Path:
    return cache_root() / "fleet" / name


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class Cluster:
    """One running cluster of the fleet."""

    name: str
    port: int
    root: Path

    @property
    def files(self) -> components.ClusterFiles:
        return components.ClusterFiles(self.root)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> kubeconfig.Endpoint:
        return kubeconfig.Endpoint(self.name, self.server, self.files.pki / "ca.crt")

    @property
    def ca(self) -> pki.CertificateAuthority:
        return pki.CertificateAuthority(self.files.pki)

    def admin_credentials(self) -> kubeconfig.Credentials:
        return kubeconfig.Credentials(cert=self.files.pki / "admin.crt", key=self.files.pki / "admin.key")


@dataclass
class Fleet:
    """The state of a fleet as recorded in its state directory."""

    root: Path
    clusters: list[Cluster] = field(default_factory=list)
    processes: list[procs.Proc] = field(default_factory=list)
    etcd_port: int = 0
    pod_range: podrange.PodRange | None = None

    @property
    def state_file(self) -> Path:
        return self.root / "fleet.json"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    def cluster(self, name: str) -> Cluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(f"no cluster {name!r} in the fleet at {self.root}")

    def save(self) -> None:
        data: dict[str, Any] = {
            "etcdPort": self.etcd_port,
            "clusters": [{"name": c.name, "port": c.port} for c in self.clusters],
            "processes": [p.to_json() for p in self.processes],
        }
        if self.pod_range is not None:
            data["podRange"] = self.pod_range.to_json()
        # Write aside and rename, so a reader never sees half a file.
        partial = self.state_file.with_name(self.state_file.name + ".new")
        partial.write_text(json.dumps(data, indent=2) + "\n")
        partial.replace(self.state_file)

    @staticmethod
    def load(root: Path) -> Fleet | None:
        state = root / "fleet.json"
        if not state.is_file():
            return None
        data: dict[str, Any] = json.loads(state.read_text())
        clusters = [Cluster(c["name"], int(c["port"]), root / c["name"]) for c in data["clusters"]]
        processes = [procs.Proc.from_json(p) for p in data["processes"]]
        claimed = data.get("podRange")
        pod_range = podrange.PodRange.from_json(claimed) if isinstance(claimed, dict) else None
        return Fleet(root, clusters, processes, int(data["etcdPort"]), pod_range)

    def live(self) -> list[procs.Proc]:
        return [p for p in self.processes if p.alive()]

    def cluster_of(self, proc: procs.Proc) -> str:
        """The cluster ``proc`` belongs to (its log lives in the cluster's directory), or '-' for etcd."""
        by_dir = {str(c.root): c.name for c in self.clusters}
        return by_dir.get(str(Path(proc.log).parent.parent), "-")

    def component(self, cluster: str, name: str) -> procs.Proc:
        """The recorded process of component ``name`` of ``cluster``."""
        self.cluster(cluster)
        if name not in CLUSTER_COMPONENTS:
            raise KeyError(
                f"{name!r} is not a component of a cluster (one of {', '.join(CLUSTER_COMPONENTS)})"
            )
        for p in self.processes:
            if p.name == name and self.cluster_of(p) == cluster:
                return p
        raise KeyError(f"no {name} recorded for cluster {cluster!r} in the fleet at {self.root}")

    def stop_component(
        self, cluster: str, name: str, say: Say = print, grace: float = STOP_GRACE
    ) -> procs.Proc:
        """Stop exactly the recorded process of one cluster's component (PID and start time must match);
        the record stays, so ``status`` shows it stopped and ``start_component`` can start it again.

        A kube-apiserver stops listening at once on SIGTERM but then waits for the watches the cluster's
        other components still hold; it keeps nothing of its own (etcd does), so after ``grace``
        seconds it is killed rather than waited for."""
        proc = self.component(cluster, name)
        if not proc.alive():
            say(f"{cluster} {name} is not running")
            return proc
        survivors = procs.stop([proc], grace=grace)
        if survivors:
            raise RuntimeError(f"could not stop {cluster} {name} (pid {proc.pid})")
        say(f"stopped {cluster} {name} (pid {proc.pid})")
        return proc

    def start_component(self, cluster: str, name: str, say: Say = print, timeout: float = 60.0) -> procs.Proc:
        """Start a stopped component of one cluster again with its recorded command line (same port,
        certificates and etcd prefix, so the cluster keeps its data), record the new process and, for
        kube-apiserver, wait until it answers ``/readyz``. A running component is left as it is."""
        old = self.component(cluster, name)
        if old.alive():
            say(f"{cluster} {name} is already running (pid {old.pid})")
            return old
        new = procs.respawn(old)
        self.processes[self.processes.index(old)] = new
        self.save()
        say(f"started {cluster} {name} (pid {new.pid})")
        if name == "kube-apiserver":
            c = self.cluster(cluster)
            ready = functools.partial(_answers_ok, f"{c.server}/readyz", _ssl_context(c))
            _wait(f"{cluster} kube-apiserver /readyz", ready, time.monotonic() + timeout, new)
        return new


def _ssl_context(cluster: Cluster) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cluster.files.pki / "ca.crt"))
    ctx.load_cert_chain(str(cluster.files.pki / "admin.crt"), str(cluster.files.pki / "admin.key"))
    return ctx


def _get(url: str, ctx: ssl.SSLContext | None, timeout: float = 2.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as err:
        return 0, str(err)


def _answers_ok(url: str, ctx: ssl.SSLContext | None) -> bool:
    return _get(url, ctx)[0] == 200


def _wait(what: str, check: Callable[[], bool], deadline: float, proc: procs.Proc | None) -> None:
    while time.monotonic() < deadline:
        if check():
            return
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{what}: {proc.name} exited; last log lines:\n{tail(Path(proc.log))}")
        time.sleep(0.2)
    log = f"; last log lines:\n{tail(Path(proc.log))}" if proc else ""
    raise TimeoutError(f"timed out waiting for {what}{log}")


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


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
    identities = {
        "kube-controller-manager": ("system:kube-controller-manager", ()),
        "kube-scheduler": ("system:kube-scheduler", ()),
        # kwok stands in for every kubelet and needs node and pod status rights across the cluster.
        "kwok": ("kwok-controller", ("system:masters",)),
    }
    for component, (user, groups) in identities.items():
        pair = ca.issue(files.pki / component, user, organizations=groups)
        doc = kubeconfig.render(
            [(cluster.endpoint, user, kubeconfig.Credentials(cert=pair.cert, key=pair.key))], cluster.name
        )
        kubeconfig.write(files.kubeconfig(component), doc)
    pki.write_service_account_keys(files.pki)


def write_fleet_kubeconfig(fleet: Fleet) -> Path:
    entries = [(c.endpoint, ADMIN_USER, c.admin_credentials()) for c in fleet.clusters]
    return kubeconfig.write(fleet.kubeconfig, kubeconfig.render(entries, fleet.clusters[0].name))


@dataclass(frozen=True)
class UpOptions:
    """``pod_cidr`` is where kwok takes pod IPs from. ``loopback_pods`` instead claims a loopback /16
    for this fleet alone (``devfleet.podrange``), so every pod IP is a loopback address of this machine
    that no other fleet hands out, and a test can run a real server "in" a pod by listening there.
    The claim is held by the fleet's etcd and released by ``down``."""

    clusters: tuple[str, ...] = DEFAULT_CLUSTERS
    nodes: int = NODES_PER_CLUSTER
    timeout: float = 180.0
    pod_cidr: str = components.POD_CIDR
    loopback_pods: bool = False


def up(root: Path, options: UpOptions = UpOptions(), say: Say = print) -> Fleet:
    """Start a fleet in ``root``; if one already runs there whole, return it as it is."""
    existing = Fleet.load(root)
    if existing is not None:
        if len(existing.live()) == len(existing.processes):
            say(f"fleet at {root} is already up")
            return existing
        say(f"fleet at {root} is partly down: stopping what remains and starting afresh")
        down(root, say)
    bin_dir = ensure_binaries(say)
    started = time.monotonic()
    deadline = started + options.timeout
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    fleet = Fleet(root, [Cluster(n, free_port(), root / n) for n in options.clusters], [], free_port())
    try:
        _start(fleet, bin_dir, options, deadline, say)
    except BaseException:
        fleet.save()
        down(root, say)
        raise
    say(f"fleet up in {time.monotonic() - started:.1f}s: {', '.join(c.name for c in fleet.clusters)}")
    return fleet


def _start(fleet: Fleet, bin_dir: Path, options: UpOptions, deadline: float, say: Say) -> None:
    from devfleet import kwok_stages, nodes

    for cluster in fleet.clusters:
        _issue_pki(cluster)
    etcd_log = fleet.root / "etcd.log"
    etcd = procs.spawn(
        "etcd",
        components.etcd_argv(bin_dir, fleet.root / "etcd-data", fleet.etcd_port, free_port()),
        etcd_log,
        fleet.root,
    )
    fleet.processes.append(etcd)
    fleet.save()
    say("starting etcd")
    url = f"http://127.0.0.1:{fleet.etcd_port}/health"
    _wait("etcd health", functools.partial(_answers_ok, url, None), deadline, etcd)
    pod_cidr = options.pod_cidr
    if options.loopback_pods:
        fleet.pod_range = podrange.claim(owner=etcd.pid)
        fleet.save()
        pod_cidr = fleet.pod_range.cidr
        say(f"pods get loopback IPs from {fleet.pod_range.network}")
    apiservers = {}
    for c in fleet.clusters:
        argv = components.apiserver_argv(bin_dir, c.files, c.port, fleet.etcd_port, c.name)
        apiservers[c.name] = procs.spawn("kube-apiserver", argv, c.files.log("kube-apiserver"), c.root)
        fleet.processes.append(apiservers[c.name])
    fleet.save()
    write_fleet_kubeconfig(fleet)
    say(f"starting {len(fleet.clusters)} kube-apiservers")
    for c in fleet.clusters:
        readyz = f"{c.server}/readyz"
        ctx = _ssl_context(c)
        _wait(
            f"{c.name} kube-apiserver /readyz",
            functools.partial(_answers_ok, readyz, ctx),
            deadline,
            apiservers[c.name],
        )
    say("starting controller managers, schedulers and kwok")
    for c in fleet.clusters:
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
    with ThreadPoolExecutor(max_workers=len(fleet.clusters)) as pool:
        waits = [
            pool.submit(nodes.prepare, fleet.kubeconfig, c.name, options.nodes, deadline)
            for c in fleet.clusters
        ]
        for w in waits:
            w.result()


def down(root: Path, say: Say = print) -> list[procs.Proc]:
    """Stop exactly the processes the fleet in ``root`` started and remove its state; return survivors."""
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
