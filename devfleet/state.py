"""What a fleet records in its state directory, and stopping or starting one recorded component.

``fleet.json`` holds the clusters (name, port, profile), etcd's port and every started process by PID,
start time and command line; ``kubeconfig`` one admin context per cluster; each cluster's directory
its PKI, component kubeconfigs and logs.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet import components, kubeconfig, pki, podrange, probe, procs
from devfleet.components import Profile

# The processes a cluster of each profile runs of its own (etcd is shared by the fleet).
PROFILE_COMPONENTS = {
    Profile.FULL: ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"),
    Profile.LIGHT: ("kube-apiserver",),
}
CLUSTER_COMPONENTS = PROFILE_COMPONENTS[Profile.FULL]
# Seconds a component stopped alone gets to exit after SIGTERM before it is killed.
STOP_GRACE = 2.0
ADMIN_USER = "fleet-admin"

Say = Callable[[str], None]


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Holds a lock beside ``root`` so that two commands never change the same fleet's record at once."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with (root.parent / f".{root.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Cluster:
    """One cluster of the fleet."""

    name: str
    port: int
    root: Path
    profile: Profile = Profile.FULL

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

    @property
    def components(self) -> tuple[str, ...]:
        return PROFILE_COMPONENTS[self.profile]

    def admin_credentials(self) -> kubeconfig.Credentials:
        return kubeconfig.Credentials(cert=self.files.pki / "admin.crt", key=self.files.pki / "admin.key")

    def readyz(self) -> Callable[[], bool]:
        """A check that this cluster's kube-apiserver answers ``/readyz`` to the admin."""
        files = self.files
        ctx = probe.client_context(files.pki / "ca.crt", files.pki / "admin.crt", files.pki / "admin.key")
        return functools.partial(probe.answers_ok, f"{self.server}/readyz", ctx)


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
            "clusters": [{"name": c.name, "port": c.port, "profile": str(c.profile)} for c in self.clusters],
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
        clusters = [
            Cluster(c["name"], int(c["port"]), root / c["name"], Profile(c.get("profile", Profile.FULL)))
            for c in data["clusters"]
        ]
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

    def write_kubeconfig(self) -> Path:
        """The admin kubeconfig: one context per cluster, named after it."""
        entries = [(c.endpoint, ADMIN_USER, c.admin_credentials()) for c in self.clusters]
        return kubeconfig.write(self.kubeconfig, kubeconfig.render(entries, self.clusters[0].name))

    def component(self, cluster: str, name: str) -> procs.Proc:
        """The recorded process of component ``name`` of ``cluster``."""
        c = self.cluster(cluster)
        if name not in c.components:
            raise KeyError(
                f"{name!r} is not a component of a cluster ({c.profile} cluster {cluster!r} runs "
                f"{', '.join(c.components)})"
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
        kube-apiserver, wait until it answers ``/readyz``. A running component is left as it is.

        The record is changed as it is on disk, under the fleet's lock, never from this copy: another
        command may have recorded a process since this copy was loaded (the fleet's Prometheus), and
        saving this copy would drop it from the record and so from ``down``."""
        with locked(self.root):
            current = Fleet.load(self.root) or self
            old = current.component(cluster, name)
            if old.alive():
                say(f"{cluster} {name} is already running (pid {old.pid})")
                self.processes = list(current.processes)
                return old
            new = procs.respawn(old)
            current.processes[current.processes.index(old)] = new
            current.save()
            self.processes = list(current.processes)
        say(f"started {cluster} {name} (pid {new.pid})")
        if name == "kube-apiserver":
            ready = self.cluster(cluster).readyz()
            probe.wait(f"{cluster} kube-apiserver /readyz", ready, time.monotonic() + timeout, new)
        return new
