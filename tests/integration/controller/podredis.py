"""A stand-in kubelet for Redis: one real redis-server per pod of a namespace, on the pod's IP.

kwok pods run nothing. ``PodRedis`` watches the namespace's pods and keeps exactly one redis-server
per live pod (by uid), bound to, connecting from and announcing the pod's loopback IP on 6379:

- a pod that gets an IP gets a server; a pod that goes (or is replaced by a new uid) loses it
  (SIGTERM, as a kubelet would stop the container, then SIGKILL after a grace period);
- with ``persistence`` each pod name has its own data directory that outlives pods (a volume claim):
  nodes.conf and the AOF come back with the pod; without it every pod incarnation starts empty (an
  emptyDir: a container restarted in the same pod finds what its predecessor left);
- a server that dies on its own is started again in the same pod after ``restart_delay`` (a
  container restart: same IP, same data directory, which an emptyDir also keeps);
- ``ip_history`` records which pod names each IP served, so tests can prove IP reuse happened;
- with ``pod_config`` each server also reads the redis.conf its pod mounts (the RedisCluster's
  ConfigMap), less the directives naming the container's paths and ports, which this stand-in sets
  itself; a server that exits with an error is reported in its pod's status as a kubelet does for a
  container with ``terminationMessagePolicy: FallbackToLogsOnError`` (the last lines it printed as
  ``lastState.terminated.message``, the pod not Ready, the container waiting in CrashLoopBackOff);
- with ``exporter`` a real redis_exporter serves the metrics of every server (``exporter.py``), as
  the chart's sidecar does beside each Redis container; it is stopped with the servers;
- with ``start_delay`` (low, high) a pod's server starts a random while in that range after the pod
  was first seen with an IP, as a container whose image is pulled and started takes a while (the
  pod is Ready under kwok before its server answers); ``started`` records when each pod's first
  server started (wall clock).
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from devfleet.redispods import container_conf, server_argv
from syncer.controller.topology import RedisNode
from syncer.kube import ApplyOptions, ClusterClient
from tests.integration.controller.exporter import RedisExporter
from tests.integration.topology.servers import client, redis_server_binary

NODE_TIMEOUT_MS = 2000
# What a kubelet keeps of a failed container's log with FallbackToLogsOnError.
TERMINATION_LINES, TERMINATION_BYTES = 80, 2048


@dataclass
class _Server:
    pod: str
    uid: str
    ip: str
    process: subprocess.Popen[bytes]
    stopped_by_test: bool = False
    died_at: float | None = None
    reported: bool = False


@dataclass
class PodRedis:
    kube: ClusterClient
    namespace: str
    root: Path
    persistence: bool = True
    password: str | None = None
    restart_delay: float = 1.0
    pod_config: bool = False
    exporter: RedisExporter | None = None
    start_delay: tuple[float, float] = (0.0, 0.0)
    started: dict[str, float] = field(default_factory=dict)  # by pod name: first server's start
    restarts: dict[str, int] = field(default_factory=dict)  # by pod uid
    servers: dict[str, _Server] = field(default_factory=dict)  # by pod uid
    ip_history: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _due: dict[str, float] = field(default_factory=dict)  # by pod uid: when its server may start

    def start(self, *, exporter: bool = False) -> PodRedis:
        if exporter:
            self.exporter = RedisExporter.start(self.root / "exporter.log", self.password)
        self._thread = threading.Thread(target=self._loop, name="pod-redis", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception as err:  # the loop must survive apiserver hiccups
                self.errors.append(f"{type(err).__name__}: {err}"[:300])
            with self._lock:
                pending = [due for uid, due in self._due.items() if uid not in self.servers]
            soonest = min(pending, default=time.monotonic() + 0.2) - time.monotonic()
            self._stop.wait(min(max(soonest, 0.01), 0.2))

    def _pods(self) -> list[dict[str, Any]]:
        return list(self.kube.list("v1", "Pod", namespace=self.namespace).items)

    def sync(self) -> None:
        live: dict[str, tuple[str, str]] = {}
        for pod in self._pods():
            meta, status = pod["metadata"], pod.get("status") or {}
            ip = status.get("podIP")
            if ip and not meta.get("deletionTimestamp"):
                live[meta["uid"]] = (meta["name"], ip)
        with self._lock:
            if self._stop.is_set():
                # A round that listed the pods before ``stop`` must start nothing after it: a server
                # it started would outlive the test on an address a later test's pod gets.
                return
            for uid in [u for u in self.servers if u not in live]:
                self._terminate(self.servers.pop(uid))
            for uid in [u for u in self._due if u not in live]:
                del self._due[uid]
            for uid, (name, ip) in live.items():
                server = self.servers.get(uid)
                if server is None:
                    if any(s.ip == ip for s in self.servers.values()):
                        continue  # the old pod on this IP is still being stopped
                    low, high = self.start_delay
                    due = self._due.setdefault(uid, time.monotonic() + random.uniform(low, high))
                    if time.monotonic() < due:
                        continue  # its container is still starting
                    self.servers[uid] = self._spawn(name, uid, ip)
                    self.started.setdefault(name, time.time())
                    history = self.ip_history.setdefault(ip, [])
                    if not history or history[-1] != name:
                        history.append(name)
                elif server.process.poll() is not None and not server.stopped_by_test:
                    # A server that exited with an error (not one a test killed with a signal).
                    if self.pod_config and server.process.returncode > 0 and not server.reported:
                        server.reported = True
                        self._report_failure(server)
                    now = time.monotonic()
                    server.died_at = server.died_at or now
                    if now - server.died_at >= self.restart_delay:
                        self.servers[uid] = self._spawn(name, uid, ip)

    def _data_dir(self, name: str, uid: str) -> Path:
        path = self.root / (f"pvc-{name}" if self.persistence else f"empty-{uid}")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _spawn(self, name: str, uid: str, ip: str) -> _Server:
        data = self._data_dir(name, uid)
        args = server_argv(redis_server_binary(), ip, data, self.password)
        args += ["--cluster-node-timeout", str(NODE_TIMEOUT_MS), "--save", ""]
        if not self.pod_config:
            # As the controller's redis.conf says, with persistence or without (then on the emptyDir);
            # with ``pod_config`` that file decides.
            args += ["--appendonly", "yes"]
            process = subprocess.Popen(args, cwd=data, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            return _Server(name, uid, ip, process)
        conf = data / "pod.conf"
        conf.write_text(self._pod_conf(name), encoding="utf-8")
        args.insert(1, str(conf))  # the file first: the options after it win, as they do in a pod
        with (data / "container.log").open("wb") as log:
            process = subprocess.Popen(args, cwd=data, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        return _Server(name, uid, ip, process)

    def _pod_conf(self, pod: str) -> str:
        body = self.kube.get("v1", "Pod", pod, self.namespace)
        volumes = body["spec"].get("volumes") or ()
        [config] = [v["configMap"]["name"] for v in volumes if "configMap" in v]
        text = self.kube.get("v1", "ConfigMap", config, self.namespace)["data"]["redis.conf"]
        return container_conf(str(text))

    def _report_failure(self, server: _Server) -> None:
        """The pod's status as a kubelet writes it after its redis container exited with an error."""
        log = (self._data_dir(server.pod, server.uid) / "container.log").read_bytes()
        tail = b"\n".join(log.splitlines()[-TERMINATION_LINES:])[-TERMINATION_BYTES:]
        spec = self.kube.get("v1", "Pod", server.pod, self.namespace)["spec"]
        [policy] = [c.get("terminationMessagePolicy") for c in spec["containers"] if c["name"] == "redis"]
        if policy != "FallbackToLogsOnError":
            tail = b""  # the default policy reads only the file the container wrote, and redis writes none
        count = self.restarts[server.uid] = self.restarts.get(server.uid, 0) + 1
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        not_ready = {"status": "False", "reason": "ContainersNotReady", "lastTransitionTime": now}
        container = {
            "name": "redis",
            "image": "redis",
            "imageID": "",
            "ready": False,
            "restartCount": count,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {
                "terminated": {
                    "exitCode": server.process.returncode,
                    "reason": "Error",
                    "message": tail.decode("utf-8", "replace"),
                    "finishedAt": now,
                }
            },
        }
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": server.pod, "namespace": self.namespace},
            "status": {
                "conditions": [{"type": "Ready", **not_ready}, {"type": "ContainersReady", **not_ready}],
                "containerStatuses": [container],
            },
        }
        self.kube.apply_status(body, ApplyOptions(field_manager="stand-in-kubelet", force=True))

    def _terminate(self, server: _Server, grace: float = 5.0) -> None:
        process = server.process
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)

    # -- what tests do to servers ----------------------------------------------------------------

    def node_of(self, pod: str) -> RedisNode:
        with self._lock:
            server = next(s for s in self.servers.values() if s.pod == pod)
        return RedisNode(server.ip, 6379)

    def pod_at(self, node: RedisNode) -> str:
        with self._lock:
            return next(s.pod for s in self.servers.values() if s.ip == node.host)

    def kill(self, node: RedisNode) -> None:
        """SIGKILL the server on ``node``; it is started again in its pod after ``restart_delay``."""
        with self._lock:
            server = next(s for s in self.servers.values() if s.ip == node.host)
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(10)

    @contextmanager
    def hung(self, node: RedisNode) -> Iterator[None]:
        """SIGSTOP the server on ``node`` for the duration, SIGCONT after."""
        with self._lock:
            server = next(s for s in self.servers.values() if s.ip == node.host)
        server.process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            server.process.send_signal(signal.SIGCONT)

    def answering(self) -> list[RedisNode]:
        found = []
        with self._lock:
            ips = [s.ip for s in self.servers.values() if s.process.poll() is None]
        for ip in ips:
            node = RedisNode(ip, 6379)
            try:
                with client(node, self.password) as conn:
                    if conn.ping():
                        found.append(node)
            except redis.RedisError:
                continue
        return found

    def reused_ips(self) -> dict[str, list[str]]:
        """IPs that served more than one pod name over the test."""
        return {ip: names for ip, names in self.ip_history.items() if len(set(names)) > 1}

    def stop(self) -> list[int]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
        alive: list[int] = []
        with self._lock:
            for server in self.servers.values():
                self._terminate(server, grace=2.0)
                if server.process.poll() is None:
                    alive.append(server.process.pid)
            self.servers.clear()
        if self.exporter is not None:
            survived = self.exporter.stop()
            alive += [survived] if survived is not None else []
        shutil.rmtree(self.root, ignore_errors=True)
        return alive
