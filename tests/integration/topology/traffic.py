"""A client that writes and reads a known keyset without pause while the topology changes under it.

``Traffic`` preloads ``bulk`` keys (so migrations have data to move), then a thread overwrites a
hot set of ``hot`` keys round after round through redis-py's cluster client, reading each key back
after writing it. Every acknowledged write is remembered; ``stop`` reads every key once more and
reports keys whose value is not the last acknowledged one (lost), and the longest time between two
acknowledged writes (the write outage the operation caused).

The hot keys carry a tag of their own writer (``hot:<tag>:{i}``, same slot as ``hot:{i}``), so a
writer that outlives its test (a test failing between ``start`` and ``stop``) cannot overwrite the
keys of a later test whose pods got its servers' addresses; ``stop_leftovers`` (called after every
test by the integration fixtures) stops such a writer.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

from syncer.controller.topology import RedisNode

GAP = 0.2
"""Seconds without an acknowledged write that count as an outage in ``Traffic.gaps``."""


@dataclass(frozen=True)
class TrafficResult:
    writes: int
    failed_writes: int
    stale_reads: int
    lost: tuple[str, ...]
    longest_outage: float
    checked: int

    def summary(self) -> str:
        return (
            f"{self.writes} writes ({self.failed_writes} failed, retried), {self.checked} keys checked, "
            f"{len(self.lost)} lost, {self.stale_reads} stale reads, longest write outage "
            f"{self.longest_outage:.3f}s"
        )


def cluster_client(nodes: Sequence[RedisNode], password: str | None = None) -> RedisCluster:
    return RedisCluster(
        startup_nodes=[ClusterNode(n.host, n.port) for n in nodes],
        password=password,
        decode_responses=True,
        socket_timeout=1.0,
        socket_connect_timeout=1.0,
        require_full_coverage=False,
        retry=Retry(NoBackoff(), 2),
    )


@dataclass
class Traffic:
    nodes: Sequence[RedisNode]
    hot: int = 300
    bulk: int = 20000
    password: str | None = None
    # Count a write (and the preload) as acknowledged only once a replica has it too (WAIT 1): what a
    # client that must survive a crashed master does, since replication is asynchronous and a master
    # killed before its replica got a write takes that write with it in any Redis Cluster.
    durable: bool = False
    acked: dict[str, str] = field(default_factory=dict)
    writes: int = 0
    failed: int = 0
    stale: int = 0
    longest: float = 0.0
    # Each stretch without an acknowledged write longer than ``GAP`` seconds: (last write before it,
    # first write after it), in ``time.monotonic`` seconds.
    gaps: list[tuple[float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def hot_key(self, i: int) -> str:
        return f"hot:{self.tag}:{{{i}}}"

    def preload(self) -> None:
        client = cluster_client(self.nodes, self.password)
        try:
            for first in range(0, self.bulk, 1000):
                values = {f"bulk:{i}": f"v{i}" for i in range(first, min(first + 1000, self.bulk))}
                client.mset_nonatomic(values)  # type: ignore[no-untyped-call]
                self.acked.update(values)
            for i in range(self.hot):
                client.set(self.hot_key(i), "0")
                self.acked[self.hot_key(i)] = "0"
            if self.durable:
                self._replicate_all(client)
        finally:
            client.close()

    def _replicate_all(self, client: RedisCluster, deadline: float = 30.0) -> None:
        """Return once a replica of every master has everything written so far (WAIT 1)."""
        end = time.monotonic() + deadline
        for node in client.get_primaries():
            while not client.execute_command("WAIT", 1, 500, target_nodes=node):  # type: ignore[no-untyped-call]
                if time.monotonic() > end:
                    raise AssertionError(f"no replica of {node.name} acknowledged the preloaded keys")

    def start(self) -> Traffic:
        if not self.acked:
            self.preload()
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)
        self._thread.start()
        _RUNNING.append(self)
        return self

    def _run(self) -> None:
        client: RedisCluster | None = None
        last_ok = time.monotonic()
        round_ = 0
        while not self._stop.is_set():
            round_ += 1
            for i in range(self.hot):
                if self._stop.is_set():
                    break
                key, value = self.hot_key(i), str(round_)
                durable = True
                while not self._stop.is_set():
                    try:
                        if client is None:
                            client = cluster_client(self.nodes, self.password)
                        client.set(key, value)
                        # Not on a replica yet (a shard without one): not acknowledged; go on with
                        # the other shards' keys, this one is written again next round.
                        durable = not self.durable or self._replicated(client, key)
                        break
                    except Exception as err:  # any client failure is an outage to retry through
                        self.failed += 1
                        self.errors.append(f"{type(err).__name__}: {err}"[:200])
                        if client is not None:
                            client.close()
                        client = None
                        time.sleep(0.05)
                else:
                    break
                if not durable:
                    self.failed += 1
                    continue
                now = time.monotonic()
                if now - last_ok > GAP:
                    self.gaps.append((last_ok, now))
                self.longest = max(self.longest, now - last_ok)
                last_ok = now
                self.acked[key] = value
                self.writes += 1
                try:
                    if client is not None and client.get(key) != value:
                        self.stale += 1
                except Exception:  # a failed read-back is not a stale read
                    pass
        if client is not None:
            client.close()

    def _halt(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        _RUNNING[:] = [t for t in _RUNNING if t is not self]

    def _replicated(self, client: RedisCluster, key: str) -> bool:
        node = client.get_node_from_key(key)
        reply = client.execute_command("WAIT", 1, 200, target_nodes=node)  # type: ignore[no-untyped-call]
        return bool(reply)

    def stop(self, nodes: Sequence[RedisNode] | None = None, deadline: float = 30.0) -> TrafficResult:
        """Stop writing and check every acknowledged key through ``nodes`` (default the start ones)."""
        self._halt()
        keys = sorted(self.acked)
        found: dict[str, str | None] = {}
        end = time.monotonic() + deadline
        while True:
            try:
                client = cluster_client(nodes or self.nodes, self.password)
                try:
                    for first in range(0, len(keys), 1000):
                        chunk = keys[first : first + 1000]
                        values = client.mget_nonatomic(chunk)  # type: ignore[no-untyped-call]
                        found.update(zip(chunk, values, strict=True))
                finally:
                    client.close()
                break
            except (redis.RedisError, OSError) as err:
                if time.monotonic() > end:
                    raise AssertionError(f"could not read the keyset back: {err}") from err
                time.sleep(0.5)
        # A hot key may hold a write newer than the last acknowledged one (sent, not yet confirmed).
        lost = tuple(k for k in keys if not _at_least(found.get(k), self.acked[k]))
        return TrafficResult(self.writes, self.failed, self.stale, lost, self.longest, len(keys))


_RUNNING: list[Traffic] = []


def stop_leftovers() -> int:
    """Stop every writer still running (its test ended without ``stop``); how many there were."""
    left = list(_RUNNING)
    for traffic in left:
        traffic._halt()
    return len(left)


def _at_least(found: str | None, acked: str) -> bool:
    if found is None:
        return False
    if found.isdigit() and acked.isdigit():
        return int(found) >= int(acked)
    return found == acked
