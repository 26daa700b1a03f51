from __future__ import annotations

from pathlib import Path

from devfleet import components


def flags(argv: list[str]) -> dict[str, str]:
    return dict(arg[2:].split("=", 1) for arg in argv[1:] if arg.startswith("--") and "=" in arg)


def test_the_apiserver_serves_tls_with_client_certificates_and_rbac() -> None:
    files = components.ClusterFiles(Path("state/eu-1"))
    argv = components.apiserver_argv(Path("bin"), files, 6443, 2379, "eu-1")
    got = flags(argv)
    assert argv[0] == "bin/kube-apiserver"
    assert got["authorization-mode"] == "RBAC"
    assert got["anonymous-auth"] == "false"
    assert got["client-ca-file"] == "state/eu-1/pki/ca.crt"
    assert got["tls-cert-file"] == "state/eu-1/pki/apiserver.crt"
    assert got["secure-port"] == "6443"
    assert got["bind-address"] == "127.0.0.1"
    assert got["etcd-servers"] == "http://127.0.0.1:2379"


def test_clusters_sharing_etcd_keep_apart_by_prefix() -> None:
    prefixes = {
        flags(components.apiserver_argv(Path("bin"), components.ClusterFiles(Path(n)), 1, 2, n))[
            "etcd-prefix"
        ]
        for n in ("canary", "eu-1", "us-1")
    }
    assert prefixes == {"/registry/canary", "/registry/eu-1", "/registry/us-1"}


def test_the_controller_manager_runs_controllers_as_service_accounts() -> None:
    got = flags(components.controller_manager_argv(Path("bin"), components.ClusterFiles(Path("c"))))
    assert got["use-service-account-credentials"] == "true"
    assert got["service-account-private-key-file"] == "c/pki/sa.key"
    assert got["kubeconfig"] == "c/kube-controller-manager.kubeconfig"


def test_kwok_manages_only_nodes_annotated_as_fake() -> None:
    got = flags(components.kwok_argv(Path("bin"), components.ClusterFiles(Path("c"))))
    assert got["manage-all-nodes"] == "false"
    assert got["manage-nodes-with-annotation-selector"] == "kwok.x-k8s.io/node=fake"


def test_a_light_apiserver_serves_only_the_groups_syncer_needs_and_keeps_no_watch_cache() -> None:
    files = components.ClusterFiles(Path("state/c-01"))
    full = flags(components.apiserver_argv(Path("bin"), files, 6443, 2379, "c-01"))
    light = flags(components.apiserver_argv(Path("bin"), files, 6443, 2379, "c-01", light=True))
    assert "runtime-config" not in full
    assert "watch-cache" not in full
    groups = light["runtime-config"].split(",")
    assert groups[0] == "api/all=false"
    served = {g.removesuffix("=true") for g in groups[1:]}
    assert {"api/v1", "events.k8s.io/v1", "apiextensions.k8s.io/v1", "coordination.k8s.io/v1"} <= served
    assert "batch/v1" not in served
    assert "apps/v1" not in served
    assert light["watch-cache"] == "false"
    # Everything that makes it a real, secured cluster stays.
    for kept in ("authorization-mode", "anonymous-auth", "client-ca-file", "tls-cert-file", "etcd-prefix"):
        assert light[kept] == full[kept]
