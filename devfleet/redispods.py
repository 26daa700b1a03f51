"""Real Redis behind the Redis pods of a fleet: a stand-in kubelet for their ``redis`` and
``exporter`` containers. NOT a kubelet.

kwok pods run nothing. With ``syncer-fleet up --redis`` the pods get loopback IPs from a range of
the fleet's own (``devfleet.podrange``), and one ``python -m devfleet.redispods ROOT CLUSTER``
process per full cluster (recorded among the fleet's processes, so ``down`` stops it) keeps, for
every live pod labelled ``app.kubernetes.io/name=redis``:

- a real ``redis-server`` bound to the pod's IP on 6379, reading the ``redis.conf`` of the
  ConfigMap the pod mounts (less the directives naming the container's paths and ports, set here),
  with the password of the Secret its ``REDIS_PASSWORD`` names, its data in
  ``<cluster>/redis-pods/<namespace>/<pod>`` (kept for the pod's name, as a volume claim would);
- when the pod has the controller's ``exporter`` sidecar, a real ``redis_exporter`` (Debian's
  ``prometheus-redis-exporter``) on the pod's IP at the sidecar's port, measuring that server;
- the exporters as targets of the fleet's Prometheus (job ``redis-<cluster>``), each labelled
  ``cluster`` (the fleet's cluster name), ``namespace``, ``pod`` and ``rediscluster``.

A server or exporter that exits is started again a second later; a pod that goes loses both
(SIGTERM). On SIGTERM the process stops everything it started and removes its targets; what it
started also gets SIGTERM from the kernel should it die without doing so (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import base64
import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from devfleet import prometheus
from devfleet.nodes import admin_client
from devfleet.state import Fleet

log = logging.getLogger(__name__)

NAME = "redis-pods"
# What the controller renders (syncer.controller.model; devfleet does not import the controller, and
# tests/unit/devfleet/test_redispods.py holds these to it): the pods' labels and the containers' ports.
LABEL_APP, LABEL_INSTANCE = "app.kubernetes.io/name", "app.kubernetes.io/instance"
REDIS_PORT, EXPORTER_PORT = 6379, 9121
SELECTOR = f"{LABEL_APP}=redis"
EXPORTER_BINARIES = ("prometheus-redis-exporter", "redis_exporter")
# Directives of the controller's redis.conf that name the container's paths or ports: set here instead.
CONTAINER_DIRECTIVES = frozenset(
    {"dir", "cluster-config-file", "port", "tls-port", "tls-cert-file", "tls-key-file", "tls-ca-cert-file"}
)
RESTART_DELAY = 1.0
STOP_GRACE = 5.0
_PR_SET_PDEATHSIG = 1


def binary(names: tuple[str, ...], package: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(f"{names[0]} is not installed: apt-get install {package} (scripts/bootstrap does)")


def job(cluster: str) -> str:
    """The Prometheus job of a cluster's redis exporters."""
    return f"{NAME}-{cluster}"


def server_argv(server: str, ip: str, data: Path, password: str | None) -> list[str]:
    """A cluster-mode redis-server bound to, connecting from and announcing ``ip`` on 6379, as the
    controller's container runs it; options a ``redis.conf`` put before them are overridden."""
    args = [
        server,
        "--bind", ip, "--port", str(REDIS_PORT),
        "--bind-source-addr", ip, "--cluster-announce-ip", ip,
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--dir", str(data), "--daemonize", "no",
        "--logfile", "redis.log",
        # As the controller's redis.conf: pods reach each other from their own (non-127.0.0.1) IPs.
        "--protected-mode", "no",
    ]  # fmt: skip
    if password is not None:
        args += ["--requirepass", password, "--masterauth", password]
    return args


def container_conf(text: str) -> str:
    """A pod's ``redis.conf`` less the directives this stand-in sets itself."""
    kept = [line for line in text.splitlines() if line.split(" ", 1)[0] not in CONTAINER_DIRECTIVES]
    return "\n".join(kept) + "\n"


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _spawn(
    argv: list[str], cwd: Path, out: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with out.open("ab") as sink:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 (one thread starts processes)
        )


def _terminate(processes: list[subprocess.Popen[bytes]]) -> None:
    live = [p for p in processes if p.poll() is None]
    for p in live:
        p.send_signal(signal.SIGCONT)
        p.terminate()
    deadline = time.monotonic() + STOP_GRACE
    for p in live:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


@dataclass(frozen=True)
class PodSpec:
    """What the stand-in runs for one pod: its place, the redis.conf it mounts, its password, and
    whether it has the exporter sidecar."""

    uid: str
    namespace: str
    name: str
    ip: str
    instance: str
    conf: str
    password: str | None
    exporter: bool


@dataclass
class _Running:
    spec: PodSpec
    server: subprocess.Popen[bytes]
    exporter: subprocess.Popen[bytes] | None
    died_at: float | None = None


@dataclass
class PodProcesses:
    """The processes of one cluster's Redis pods (``sync`` with the live pods; ``stop``)."""

    cluster: str
    root: Path
    targets: Path
    running: dict[str, _Running] = field(default_factory=dict)  # by pod uid

    def sync(self, specs: list[PodSpec]) -> None:
        wanted = {s.uid: s for s in specs}
        gone = [self.running.pop(uid) for uid in list(self.running) if uid not in wanted]
        _terminate([p for r in gone for p in (r.server, r.exporter) if p is not None])
        for uid, spec in wanted.items():
            current = self.running.get(uid)
            if current is None:
                if any(r.spec.ip == spec.ip for r in self.running.values()):
                    continue  # the old pod on this IP is still being stopped
                self.running[uid] = self._start(spec)
            else:
                self._restart_dead(current)
        self._write_targets()

    def _data(self, spec: PodSpec) -> Path:
        path = self.root / spec.namespace / spec.name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _start_server(self, spec: PodSpec) -> subprocess.Popen[bytes]:
        data = self._data(spec)
        conf = data / "pod.conf"
        conf.write_text(spec.conf, encoding="utf-8")
        argv = server_argv(binary(("redis-server",), "redis-server"), spec.ip, data, spec.password)
        argv.insert(1, str(conf))  # the file first: the options after it win, as they do in a pod
        return _spawn(argv, data, data / "container.log")

    def _start_exporter(self, spec: PodSpec) -> subprocess.Popen[bytes]:
        data = self._data(spec)
        argv = [
            binary(EXPORTER_BINARIES, "prometheus-redis-exporter"),
            "-web.listen-address", f"{spec.ip}:{EXPORTER_PORT}",
            "-redis.addr", f"redis://{spec.ip}:{REDIS_PORT}",
            "-connection-timeout", "2s",
        ]  # fmt: skip
        env = dict(os.environ)
        if spec.password is not None:
            env["REDIS_PASSWORD"] = spec.password  # as the sidecar gets it: never on a command line
        return _spawn(argv, data, data / "exporter.log", env)

    def _start(self, spec: PodSpec) -> _Running:
        server = self._start_server(spec)
        exporter = self._start_exporter(spec) if spec.exporter else None
        log.info("pod %s/%s (%s): redis-server pid %s", spec.namespace, spec.name, spec.ip, server.pid)
        return _Running(spec, server, exporter)

    def _restart_dead(self, current: _Running) -> None:
        dead = current.server.poll() is not None
        dead_exporter = current.exporter is not None and current.exporter.poll() is not None
        if not (dead or dead_exporter):
            current.died_at = None
            return
        now = time.monotonic()
        current.died_at = current.died_at or now
        if now - current.died_at < RESTART_DELAY:
            return
        if dead:
            current.server = self._start_server(current.spec)
        if dead_exporter:
            current.exporter = self._start_exporter(current.spec)
        current.died_at = None

    def _write_targets(self) -> None:
        groups = [
            prometheus.TargetGroup(
                (f"{r.spec.ip}:{EXPORTER_PORT}",),
                {
                    "cluster": self.cluster,
                    "namespace": r.spec.namespace,
                    "pod": r.spec.name,
                    "rediscluster": r.spec.instance,
                },
            )
            for r in sorted(self.running.values(), key=lambda r: (r.spec.namespace, r.spec.name))
            if r.exporter is not None
        ]
        prometheus.write_targets(self.targets, job(self.cluster), groups)

    def stop(self) -> None:
        everything = [p for r in self.running.values() for p in (r.server, r.exporter) if p is not None]
        self.running.clear()
        _terminate(everything)
        prometheus.remove_targets(self.targets, job(self.cluster))


def _secret_value(core: client.CoreV1Api, namespace: str, ref: Mapping[str, Any]) -> str | None:
    secret = core.read_namespaced_secret(ref["name"], namespace)
    value = (secret.data or {}).get(ref["key"])
    return None if value is None else base64.b64decode(value).decode()


def pod_spec(core: client.CoreV1Api, pod: Any) -> PodSpec:
    """What to run for ``pod`` (a V1Pod); raises ApiException when its ConfigMap or Secret is
    missing (the kubelet would not start its container either)."""
    meta, spec = pod.metadata, pod.spec
    configs = [v.config_map.name for v in spec.volumes or () if v.config_map is not None]
    text = ""
    if configs:
        data = core.read_namespaced_config_map(configs[0], meta.namespace).data or {}
        text = str(data.get("redis.conf", ""))
    password = None
    containers = {c.name: c for c in spec.containers}
    for env in containers["redis"].env or ():
        if env.name == "REDIS_PASSWORD" and env.value_from and env.value_from.secret_key_ref:
            ref = env.value_from.secret_key_ref
            password = _secret_value(core, meta.namespace, {"name": ref.name, "key": ref.key})
    return PodSpec(
        meta.uid,
        meta.namespace,
        meta.name,
        pod.status.pod_ip,
        (meta.labels or {}).get(LABEL_INSTANCE, ""),
        container_conf(text),
        password,
        "exporter" in containers,
    )


def live_pods(core: client.CoreV1Api, fleet: Fleet, known: Mapping[str, PodSpec]) -> list[PodSpec]:
    """The Redis pods of the cluster with an IP of the fleet's range, not being deleted."""
    found: list[PodSpec] = []
    pods: list[Any] = core.list_pod_for_all_namespaces(label_selector=SELECTOR).items
    for pod in pods:
        ip = pod.status.pod_ip if pod.status else None
        if not ip or pod.metadata.deletion_timestamp or "redis" not in {c.name for c in pod.spec.containers}:
            continue
        if fleet.pod_range is None or not fleet.pod_range.contains(ip):
            continue
        spec = known.get(pod.metadata.uid)
        if spec is None:
            try:
                spec = pod_spec(core, pod)
            except client.ApiException as err:
                meta = pod.metadata
                log.warning("pod %s/%s not started yet: %s", meta.namespace, meta.name, err.reason)
                continue
        found.append(spec)
    return found


def run(root: Path, cluster: str, stop: threading.Event, every: float = 0.5) -> None:
    """Keep a redis-server (and exporter) behind every Redis pod of ``cluster`` until ``stop``."""
    fleet = Fleet.load(root)
    if fleet is None:
        raise RuntimeError(f"no fleet at {root}")
    pods = PodProcesses(cluster, fleet.cluster(cluster).root / NAME, prometheus.targets_dir(root))
    try:
        with admin_client(fleet.kubeconfig, cluster) as api_client:
            core = client.CoreV1Api(api_client)
            while not stop.is_set():
                try:
                    known = {uid: r.spec for uid, r in pods.running.items()}
                    pods.sync(live_pods(core, fleet, known))
                except Exception as err:  # the loop must survive apiserver hiccups
                    log.warning("%s: %s: %s", cluster, type(err).__name__, err)
                stop.wait(every)
    finally:
        pods.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m devfleet.redispods ROOT CLUSTER", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    run(Path(argv[0]), argv[1], stop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
