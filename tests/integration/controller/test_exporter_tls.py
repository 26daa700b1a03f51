"""The exporter sidecar of a RedisCluster with ``spec.tls``, run as the pod would run it: a real
redis-server on the redis.conf the controller renders (TLS only, client certificates asked for), and
the Debian ``redis_exporter`` with the environment and the mounted Secret of the rendered sidecar.

Before, the sidecar dialled ``redis://`` to a server that serves only TLS: ``redis_up`` was 0 on
every pod of such a cluster and its ``RedisDown`` alert fired for healthy nodes."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devfleet.pki import CertificateAuthority
from devfleet.probe import free_port, tail
from syncer.controller import children
from syncer.controller.model import REDIS_PORT, parse
from tests.integration.controller.exporter import exporter_binary
from tests.integration.topology.servers import free_ports, redis_server_binary
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

CLUSTER = {
    "apiVersion": "redis.syncer.dev/v1alpha1",
    "kind": "RedisCluster",
    "metadata": {"name": "cache", "namespace": "shop", "uid": "u-1", "generation": 1},
    "spec": {
        "shards": 1,
        "replicasPerShard": 0,
        "version": "7.0.15",
        "tls": {"secretRef": {"name": "cache-tls"}},
        "exporter": {"enabled": True},
    },
}


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait(10)


def mounted(tmp_path: Path) -> Path:
    """The files of the Secret named by spec.tls, as the pod mounts them: ``ca.crt``, ``tls.crt`` and
    ``tls.key``, the certificate naming the pod (not the loopback address)."""
    folder = tmp_path / "tls"
    folder.mkdir()
    ca = CertificateAuthority.create(tmp_path / "ca", "redis-ca")
    ca.issue(
        folder / "tls", "cache-0-0", server_names=("cache-0-0.cache-headless.shop.svc",), client_too=True
    )
    shutil.copy(ca.cert_path, folder / "ca.crt")
    return folder


def test_the_exporter_sidecar_reads_a_redis_that_serves_only_tls(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    spec = parse(CLUSTER)
    tls = mounted(tmp_path)
    [port], metrics_port = free_ports(1), free_port()
    data = tmp_path / "data"
    data.mkdir()
    conf = data / "redis.conf"
    rendered = children.redis_conf(spec).replace(f"{children.TLS_MOUNT}/", f"{tls}/")
    conf.write_text(rendered.replace("\ndir /data\n", f"\ndir {data}\n"), encoding="utf-8")
    assert "port 0\n" in conf.read_text()
    # Only what names the container's port and paths differs from the pod's.
    argv = [
        redis_server_binary(), str(conf), "--tls-port", str(port), "--bind", "127.0.0.1",
        "--dir", str(data), "--cluster-config-file", "nodes.conf", "--logfile", "redis.log",
    ]  # fmt: skip
    processes.append(subprocess.Popen(argv, cwd=data, stdin=subprocess.DEVNULL))

    template = children.pod_template(spec, 0)
    [sidecar] = [c for c in template["spec"]["containers"] if c["name"] == "exporter"]
    env = {e["name"]: e["value"] for e in sidecar["env"]}
    env = {
        name: value.replace(f"{children.TLS_MOUNT}/", f"{tls}/").replace(f":{REDIS_PORT}", f":{port}")
        for name, value in env.items()
    }
    log = tmp_path / "exporter.log"
    with log.open("wb") as out:
        processes.append(
            subprocess.Popen(
                [exporter_binary(), "-web.listen-address", f"127.0.0.1:{metrics_port}"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        )

    def redis_up() -> float | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            return None
        for family in text_string_to_metric_families(text):
            if family.name == "redis_up":
                return float(family.samples[0].value)
        return None

    [up] = eventually("the exporter to answer", lambda: None if (v := redis_up()) is None else [v], 30.0)
    assert up == 1.0, f"redis_up {up}:\n{tail(log)}\n{tail(data / 'redis.log')}"
    # The files the sidecar names are the Secret's, mounted where it names them.
    [mount] = sidecar.get("volumeMounts") or [{}]
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert mount.get("mountPath") == children.TLS_MOUNT
    assert volumes[mount["name"]]["secret"]["secretName"] == "cache-tls"
