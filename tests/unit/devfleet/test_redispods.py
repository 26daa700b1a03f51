"""The fleet's stand-in for the redis and exporter containers runs what the controller renders."""

from __future__ import annotations

import json
from pathlib import Path

from devfleet import prometheus, redispods
from syncer.controller import model


def test_the_stand_in_selects_and_serves_on_what_the_controller_renders() -> None:
    assert (redispods.LABEL_APP, redispods.LABEL_INSTANCE) == (model.LABEL_APP, model.LABEL_INSTANCE)
    assert (redispods.REDIS_PORT, redispods.EXPORTER_PORT) == (model.REDIS_PORT, model.EXPORTER_PORT)


def test_the_pod_s_redis_conf_loses_the_directives_naming_the_container_s_paths_and_ports() -> None:
    text = "port 6379\ndir /data\nmaxclients 20\ncluster-config-file /data/nodes.conf\nappendonly yes"
    assert redispods.container_conf(text) == "maxclients 20\nappendonly yes\n"


def test_a_server_binds_announces_and_connects_from_its_pod_ip_with_its_password() -> None:
    argv = redispods.server_argv("redis-server", "127.70.0.5", Path("/d"), "pw")
    pairs = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert pairs["--bind"] == pairs["--bind-source-addr"] == pairs["--cluster-announce-ip"] == "127.70.0.5"
    assert (pairs["--requirepass"], pairs["--masterauth"]) == ("pw", "pw")
    assert "--requirepass" not in redispods.server_argv("redis-server", "127.70.0.5", Path("/d"), None)


def test_each_exporter_is_a_target_labelled_with_the_fleet_s_cluster_and_its_pod(tmp_path: Path) -> None:
    pods = redispods.PodProcesses("eu-1", tmp_path / "pods", tmp_path / "targets")
    spec = redispods.PodSpec("u1", "shop", "cache-0", "127.70.0.9", "cache", "", None, exporter=True)
    pods.running["u1"] = redispods._Running(spec, server=None, exporter=None)  # type: ignore[arg-type]
    pods._write_targets()
    assert json.loads((tmp_path / "targets" / "redis-pods-eu-1.json").read_text()) == []
    pods.running["u1"].exporter = object()  # type: ignore[assignment]
    pods._write_targets()
    [group] = json.loads((tmp_path / "targets" / "redis-pods-eu-1.json").read_text())
    assert group == {
        "targets": ["127.70.0.9:9121"],
        "labels": {"cluster": "eu-1", "namespace": "shop", "pod": "cache-0", "rediscluster": "cache"},
    }
    prometheus.remove_targets(tmp_path / "targets", redispods.job("eu-1"))
    assert not (tmp_path / "targets" / "redis-pods-eu-1.json").exists()
