"""Real redis-server processes in cluster mode for the topology tests.

Each server listens on 127.0.0.1 only, keeps its nodes-N.conf, log and dump file (written only by a
replica's full sync) in the given directory, saves nothing on its own, and is stopped (and reaped)
by ``stop``; ``stop`` returns the pids still alive so the fixture can fail loudly on a leak.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from syncer.controller.topology import RedisNode, TopologyOptions, bootstrap, parse_cluster_nodes
from tests.support.waiting import eventually

NODE_TIMEOUT_MS = 1000
START_DEADLINE = 15.0
T = TypeVar("T")


def redis_server_binary() -> str:
    """The redis-server on PATH; a missing one fails the test run, it is never a skip."""
    path = shutil.which("redis-server")
    if path is None:
        pytest.fail(
            "redis-server is not on PATH: install the Debian package redis-server (scripts/bootstrap)"
        )
    return path


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """Ports p where both p and the cluster bus port p+10000 are free right now."""
    rng = random.Random()
    chosen: list[int] = []
    for _ in range(2000):
        port = rng.randrange(20000, 40000)
        if port in chosen or port + 10000 in chosen or port - 10000 in chosen:
            continue
        if _bindable(port) and _bindable(port + 10000):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError(f"could not find {count} free port pairs")


def client(node: RedisNode, password: str | None = None) -> redis.Redis:
    """A plain client for arranging and checking state in tests (no retries, short timeouts)."""
    return redis.Redis(
        host=node.host,
        port=node.port,
        password=password,
        decode_responses=True,
        socket_timeout=5,
        socket_connect_timeout=5,
        retry=Retry(NoBackoff(), 0),
    )


def cluster_command(node: RedisNode, *args: str | int, password: str | None = None) -> str:
    with client(node, password) as conn:
        reply = conn.execute_command("CLUSTER", *args)
    assert isinstance(reply, str), reply
    return reply


@dataclass
class RedisServers:
    """A set of cluster-mode redis-server processes started by the tests."""

    root: Path
    password: str | None = None
    processes: dict[RedisNode, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, count: int) -> list[RedisNode]:
        binary = redis_server_binary()
        nodes = [RedisNode("127.0.0.1", port) for port in free_ports(count)]
        for node in nodes:
            self.processes[node] = self._spawn(binary, node)
        for node in nodes:
            self._wait_ready(node)
        return nodes

    def start_at(self, nodes: Sequence[RedisNode]) -> list[RedisNode]:
        """Servers listening on exactly these addresses (e.g. pod IPs that are loopback addresses)."""
        binary = redis_server_binary()
        for node in nodes:
            self.processes[node] = self._spawn(binary, node)
        for node in nodes:
            self._wait_ready(node)
        return list(nodes)

    def _spawn(self, binary: str, node: RedisNode) -> subprocess.Popen[bytes]:
        port = node.port
        name = f"{node.host}-{port}"
        args = [
            binary,
            "--bind", node.host,
            "--port", str(port),
            "--cluster-enabled", "yes",
            "--cluster-config-file", f"nodes-{name}.conf",
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            "--dir", str(self.root),
            "--daemonize", "no",
            "--save", "",
            "--appendonly", "no",
            # A replica keeps the dataset of its last full sync in this file and a restarted server
            # loads it: one file per server, or a restart would load another server's keys.
            "--dbfilename", f"dump-{name}.rdb",
            "--logfile", f"redis-{name}.log",
        ]  # fmt: skip
        if node.host != "127.0.0.1":
            # Many servers on one machine, each on its own loopback address: make each one connect
            # from and announce its own address, as a server in its own pod would.
            args += ["--bind-source-addr", node.host, "--cluster-announce-ip", node.host]
            # As the controller's redis.conf: peers connect from their own (non-127.0.0.1) IPs.
            args += ["--protected-mode", "no"]
        if self.password is not None:
            args += ["--requirepass", self.password, "--masterauth", self.password]
        return subprocess.Popen(args, cwd=self.root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)

    def _wait_ready(self, node: RedisNode) -> None:
        deadline = time.monotonic() + START_DEADLINE
        process = self.processes[node]
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"redis-server {node} exited with {process.returncode}: {self.log(node)}")
            try:
                with client(node, self.password) as conn:
                    if conn.ping():
                        return
            except redis.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server {node} did not answer PING in time: {self.log(node)}")
            time.sleep(0.05)

    def log(self, node: RedisNode) -> str:
        path = self.root / f"redis-{node.host}-{node.port}.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else "(no log)"

    def restart(self, node: RedisNode, *, fresh: bool = False) -> None:
        """Start a killed server again on its address; ``fresh`` drops its nodes.conf, as a pod
        whose data directory was not kept would come back (a new node id, no cluster)."""
        process = self.processes[node]
        if process.poll() is None:
            self.kill(node)
        if fresh:
            (self.root / f"nodes-{node.host}-{node.port}.conf").unlink(missing_ok=True)
            (self.root / f"dump-{node.host}-{node.port}.rdb").unlink(missing_ok=True)
        self.processes[node] = self._spawn(redis_server_binary(), node)
        self._wait_ready(node)

    def pause(self, node: RedisNode) -> None:
        """SIGSTOP: the server hangs with its sockets open."""
        self.processes[node].send_signal(signal.SIGSTOP)

    def resume(self, node: RedisNode) -> None:
        self.processes[node].send_signal(signal.SIGCONT)

    def kill(self, node: RedisNode) -> None:
        """SIGKILL one server, as a crash would, and reap it."""
        process = self.processes[node]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def stop(self) -> list[int]:
        """Stop every server; return the pids that are still alive afterwards."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGKILL)
        alive: list[int] = []
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                alive.append(process.pid)
                continue
            try:
                os.kill(process.pid, 0)
            except ProcessLookupError:
                continue
            alive.append(process.pid)
        return alive


def shards_of(nodes: Sequence[RedisNode], masters: int) -> list[list[RedisNode]]:
    """Shard i is [nodes[i], nodes[masters + i], nodes[2 * masters + i], ...]."""
    return [list(nodes[i::masters]) for i in range(masters)]


def knows(node: RedisNode, other: RedisNode) -> bool:
    """``node`` has finished the handshake with ``other``."""
    other_id = cluster_command(other, "MYID")
    entries = parse_cluster_nodes(cluster_command(node, "NODES"))
    return any(e.node_id == other_id and e.is_known for e in entries)


def master_and_newcomer(
    servers: RedisServers, keys: int, options: TopologyOptions
) -> tuple[RedisNode, RedisNode]:
    """Two new servers: ``a`` serves every slot and holds ``keys`` keys (``key:0`` ...), ``b`` has
    joined the cluster as a master serving nothing, as a scale-out leaves it before slots move."""
    a, b = servers.start(2)
    assert bootstrap([[a]], options).healthy
    with client(a) as conn:
        pipe = conn.pipeline(transaction=False)
        for i in range(keys):
            pipe.set(f"key:{i}", "v")
        pipe.execute()
    cluster_command(a, "MEET", b.host, b.port)
    eventually("b to join", lambda: "cluster_state:ok" in cluster_command(b, "INFO"), 30, every=0.1)
    return a, b
