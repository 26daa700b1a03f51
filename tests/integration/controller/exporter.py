"""A real ``redis_exporter`` (Debian package ``prometheus-redis-exporter``) beside the tests'
redis-servers, as the chart's sidecar runs beside each Redis container in a cluster.

One exporter serves every server of a test through its multi-target endpoint
(``/scrape?target=redis://ip:6379``, as a Prometheus scrape config with relabelling uses it); it
listens on a free port of 127.0.0.1 and is stopped with the servers (``PodRedis.stop``).
"""

from __future__ import annotations

import shutil
import subprocess
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from devfleet.probe import free_port, tail
from syncer.controller.topology import RedisNode
from tests.support.waiting import eventually

BINARIES = ("prometheus-redis-exporter", "redis_exporter")


def exporter_binary() -> str:
    """The exporter's path; an absent one fails the test naming the set-up step that installs it."""
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError(
        "redis_exporter is not installed: scripts/bootstrap installs the Debian package "
        "prometheus-redis-exporter (apt-get install prometheus-redis-exporter)"
    )


@dataclass
class RedisExporter:
    process: subprocess.Popen[bytes]
    port: int
    password: str | None = None

    @classmethod
    def start(cls, log: Path, password: str | None = None) -> RedisExporter:
        port = free_port()
        argv = [
            exporter_binary(),
            "-web.listen-address", f"127.0.0.1:{port}",
            "-redis.addr", "",  # no default target: every scrape names its server
            "-connection-timeout", "2s",
        ]  # fmt: skip
        if password is not None:
            argv += ["-redis.password", password]
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        exporter = cls(process, port, password)
        try:
            eventually(f"redis_exporter to serve on port {port}", lambda: exporter.answers(log), 30.0)
        except BaseException:
            exporter.stop()
            raise
        return exporter

    def answers(self, log: Path) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"redis_exporter exited with {self.process.returncode}:\n{tail(log)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as resp:
                return int(resp.status) == 200
        except OSError:
            return False

    def scrape(self, node: RedisNode) -> dict[str, Metric]:
        """The exporter's metric families for one server, parsed as Prometheus parses them."""
        target = urllib.parse.quote(f"redis://{node.host}:{node.port}", safe="")
        url = f"http://127.0.0.1:{self.port}/scrape?target={target}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            text = resp.read().decode()
        return {family.name: family for family in text_string_to_metric_families(text)}

    def stop(self) -> int | None:
        """Stop the exporter; its pid when it survived."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.pid if self.process.poll() is None else None
