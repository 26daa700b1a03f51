"""Live slot migration: syncer's topology code vs ``redis-cli --cluster rebalance``, side by side.

Run: ``python bench/bench_reshard.py [--keys 400000] [--runs 1]``. For each contender the bench
builds the same cluster of real redis-servers in a temporary folder: master A serves all 16384 slots
and holds ``--keys`` keys, master B is an empty member. Then, as one whole process each:

* ``syncer``: ``python -m bench.bench_reshard --mover HOST:PORT HOST:PORT``, which calls
  ``topology_converge.converge([[A], [B]])`` -- the controller's scale-out pass;
* ``redis-cli``: ``redis-cli --cluster rebalance A --cluster-use-empty-masters`` (its defaults:
  10 keys per MIGRATE).

Both move half the slots, so the same keys, from A to B. While a contender runs, a writer process
overwrites a hot set of keys through redis-py's cluster client without pause; the longest time
between two acknowledged writes from the contender's start to a second after its end is the write
stall. The bench prints keys moved per
second, the longest stall and the commands that failed (client errors) for both, checks that every
key is still there, and compares over the runs the median rate, the median longest stall and the
worst one; it exits 0 only when syncer moves at least as fast with no longer a stall by both
measures and no more client errors in all.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
from redis.cluster import ClusterNode, RedisCluster

from syncer.controller.topology import RedisNode, TopologyOptions, bootstrap
from syncer.controller.topology_converge import converge

VALUE = "v" * 32


def _server(root: Path, port: int) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on PATH (Debian package redis-server)")
    args = [
        binary, "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
        "--cluster-config-file", f"nodes-{port}.conf", "--cluster-node-timeout", "5000",
        "--dir", str(root), "--save", "", "--appendonly", "no", "--logfile", f"redis-{port}.log",
    ]  # fmt: skip
    return subprocess.Popen(args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def _free_port() -> int:
    import socket

    while True:
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = int(a.getsockname()[1])
        if port + 10000 < 65536:
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port


def _client(node: RedisNode) -> redis.Redis:
    return redis.Redis(node.host, node.port, decode_responses=True, socket_timeout=10)


def _wait_up(node: RedisNode) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if _client(node).ping():
                return
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit(f"redis-server {node} did not start")


def build(root: Path, keys: int) -> tuple[list[subprocess.Popen[bytes]], RedisNode, RedisNode]:
    """A serves every slot and holds ``keys`` keys; B is an empty master that knows A."""
    root.mkdir(parents=True)
    a, b = RedisNode("127.0.0.1", _free_port()), RedisNode("127.0.0.1", _free_port())
    procs = [_server(root, a.port), _server(root, b.port)]
    for node in (a, b):
        _wait_up(node)
    report = bootstrap([[a]], TopologyOptions(ready_timeout=30))
    if not report.healthy:
        raise SystemExit(f"could not form the cluster: {report.summary()}")
    conn = _client(a)
    for first in range(0, keys, 20000):
        pipe = conn.pipeline(transaction=False)
        for i in range(first, min(first + 20000, keys)):
            pipe.set(f"key:{i}", VALUE)
        pipe.execute()
    conn.execute_command("CLUSTER", "MEET", b.host, b.port)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        nodes = _client(b).execute_command("CLUSTER", "NODES")
        info = _client(b).execute_command("CLUSTER", "INFO")
        if nodes.count("connected") == 2 and "handshake" not in nodes and "cluster_state:ok" in info:
            return procs, a, b
        time.sleep(0.1)
    raise SystemExit("B did not join the cluster")


def writer(host: str, port: int, out: Path) -> None:
    """Overwrite hot keys until SIGTERM; write to ``out`` every gap of 1 ms or more between two
    acknowledged writes (when it ended, on the system's monotonic clock, and how long it was)."""
    stop = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    client = RedisCluster(startup_nodes=[ClusterNode(host, port)], socket_timeout=5)
    # The writer stands for a client elsewhere: its own pauses must not count as the move's. A full
    # collection of this process takes about 12 ms (redis-py's modules are many objects), falls on a
    # fixed count of writes and so inside either contender's run by chance; the loop makes no
    # cycles, so the collector is off while it measures.
    client.set("hot:0", "0")
    gc.collect()
    gc.freeze()
    gc.disable()
    last = time.monotonic()
    gaps: list[tuple[float, float]] = []
    writes, i = 0, 0
    errors: dict[str, int] = {}
    while not stop:
        try:
            client.set(f"hot:{i % 2000}", str(i))
        except Exception as err:  # an outage or a client error: counted, the gap grows
            errors[type(err).__name__] = errors.get(type(err).__name__, 0) + 1
            time.sleep(0.01)
            continue
        now = time.monotonic()
        if now - last >= 0.001:
            gaps.append((now, now - last))
        last, writes, i = now, writes + 1, i + 1
    out.write_text(json.dumps({"gaps": gaps, "writes": writes, "errors": errors}))


def mover(a: str, b: str) -> None:
    """The syncer contender: one converging pass over shards [[A], [B]]."""
    nodes = [RedisNode(h, int(p)) for h, _, p in (x.rpartition(":") for x in (a, b))]
    result = converge([[nodes[0]], [nodes[1]]], (), TopologyOptions(ready_timeout=30))
    if result.problems or not result.report.healthy:
        raise SystemExit(f"converge failed: {result.problems or result.report.summary()}")


def run_one(name: str, keys: int, root: Path) -> dict[str, Any]:
    procs, a, b = build(root / name, keys)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    stall_file = root / f"{name}-stall.json"
    try:
        w = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--writer", str(a), str(stall_file)],
            env=env,
        )
        time.sleep(2.0)
        if name == "syncer":
            argv = [sys.executable, str(Path(__file__).resolve()), "--mover", str(a), str(b)]
        else:
            argv = ["redis-cli", "--cluster", "rebalance", str(a), "--cluster-use-empty-masters"]
        started = time.monotonic()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        time.sleep(1.0)
        w.send_signal(signal.SIGTERM)
        w.wait(30)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed ({done.returncode}): {done.stdout[-500:]} {done.stderr[-500:]}")
        moved = int(_client(b).dbsize())
        total = int(_client(a).dbsize()) + moved
        stall = json.loads(stall_file.read_text())
        expected = keys + min(stall["writes"], 2000)
        if total != expected:
            raise SystemExit(f"{name}: {total} keys after the move, expected {expected}")
        return {
            "seconds": seconds,
            "moved": moved,
            "rate": moved / seconds,
            # The stalls of the move: gaps that ended once the contender started (its process and
            # the second after it), not the writer's own before it.
            "stall": max((length for end, length in stall["gaps"] if end >= started), default=0.0),
            "errors": sum(stall["errors"].values()),
            "kinds": ", ".join(sorted(stall["errors"])),
        }
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", type=int, default=400000, help="keys on A before the move (half move)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--writer", nargs=2, metavar=("HOST:PORT", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--mover", nargs=2, metavar=("A", "B"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        host, _, port = args.writer[0].rpartition(":")
        writer(host, int(port), Path(args.writer[1]))
        return 0
    if args.mover:
        mover(*args.mover)
        return 0
    if shutil.which("redis-cli") is None:
        raise SystemExit("redis-cli is not on PATH (Debian package redis-tools)")
    results: dict[str, list[dict[str, Any]]] = {"syncer": [], "redis-cli": []}
    with tempfile.TemporaryDirectory(prefix="bench-reshard-") as tmp:
        for run in range(args.runs):
            for name in ("redis-cli", "syncer"):
                found = run_one(name, args.keys, Path(tmp) / f"run{run}")
                results[name].append(found)
                print(
                    f"{name:>9}: moved {found['moved']:.0f} keys in {found['seconds']:.2f}s = "
                    f"{found['rate']:.0f} keys/s, longest write stall {found['stall'] * 1000:.1f} ms, "
                    f"{found['errors']:.0f} client error(s) {found['kinds']}",
                    flush=True,
                )
    # Each run's figures are one tool's and one run's: compared over the runs, the median (what a
    # move is like) and the worst longest stall (what a client may meet), never the best run's.
    rates = {name: statistics.median(x["rate"] for x in r) for name, r in results.items()}
    stalls = {name: statistics.median(x["stall"] for x in r) for name, r in results.items()}
    worst = {name: max(x["stall"] for x in r) for name, r in results.items()}
    rate = rates["syncer"] / rates["redis-cli"]
    stall = stalls["syncer"] / stalls["redis-cli"]
    tail = worst["syncer"] / worst["redis-cli"]
    errors = {name: sum(x["errors"] for x in r) for name, r in results.items()}
    print(
        f"syncer / redis-cli over {args.runs} run(s): {rate:.2f}x keys/s (medians), longest write stall "
        f"{stall:.2f}x (medians: {stalls['syncer'] * 1000:.1f} ms / {stalls['redis-cli'] * 1000:.1f} ms), "
        f"{tail:.2f}x (worst: {worst['syncer'] * 1000:.1f} ms / {worst['redis-cli'] * 1000:.1f} ms), "
        f"client errors {errors['syncer']} / {errors['redis-cli']}"
    )
    ok = rate >= 1.0 and stall <= 1.0 and tail <= 1.0 and errors["syncer"] <= errors["redis-cli"]
    print(
        "goal met"
        if ok
        else "goal NOT met: syncer must move as fast with no longer a stall and no more client errors"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
