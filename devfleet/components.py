"""Command lines of the fleet's components. Pure: paths and ports in, argv out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

SERVICE_CIDR = "10.96.0.0/16"


class Profile(StrEnum):
    """What a cluster runs. ``full``: kube-apiserver, controller manager, scheduler and kwok nodes, so
    pods run and turn Ready. ``light``: only a kube-apiserver (own CA, TLS, RBAC) trimmed for memory;
    objects are stored and served, but nothing reconciles them."""

    FULL = "full"
    LIGHT = "light"


# The API groups a light cluster serves: what syncer writes there (core, events, leases, CRDs), what
# RBAC and the identity requests need, and what the apiserver's own controllers use (service IP
# allocation in networking, the kubernetes Service's EndpointSlices in discovery, its identity leases
# in coordination).
LIGHT_API_GROUPS = (
    "api/v1",
    "events.k8s.io/v1",
    "coordination.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "apiregistration.k8s.io/v1",
    "rbac.authorization.k8s.io/v1",
    "authentication.k8s.io/v1",
    "authorization.k8s.io/v1",
    "networking.k8s.io/v1",
    "discovery.k8s.io/v1",
)

LIGHT_ADMISSION_OFF = (
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "MutatingAdmissionPolicy",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "Priority",
    "CertificateApproval",
    "CertificateSigning",
    "CertificateSubjectRestriction",
    "ClusterTrustBundleAttest",
)

# The Go runtime of a light apiserver collects garbage when its heap has grown 10% (GOGC), so that
# little of an idle apiserver's memory is collector slack. No GOMEMLIMIT: a soft limit below the
# live heap (about 70 MiB) makes the collector run without pause, and an idle apiserver then uses
# about 7% of a core instead of 0.3% (see docs/local-fleet.md), which is what keeps a hundred of
# them from running on a small machine.
LIGHT_ENV = {"GOGC": "10"}


def light_apiserver_flags() -> list[str]:
    """Flags added to a light cluster's kube-apiserver: only ``LIGHT_API_GROUPS`` served, no watch
    cache (lists and watches are served from etcd; every resource would otherwise keep a cache of its
    own), and small request limits."""
    return [
        "--runtime-config=" + ",".join(["api/all=false", *(f"{g}=true" for g in LIGHT_API_GROUPS)]),
        "--watch-cache=false",
        # Admission plugins whose informers watch groups a light cluster does not serve would wait for
        # them forever and keep the apiserver from becoming ready.
        "--disable-admission-plugins=" + ",".join(LIGHT_ADMISSION_OFF),
        "--max-requests-inflight=100",
        "--max-mutating-requests-inflight=50",
        "--event-ttl=15m",
        # Nothing in a light cluster reaches the apiserver through the `kubernetes` Service, and its
        # loopback address is refused as an endpoint anyway (a failed write every 10 s).
        "--endpoint-reconciler-type=none",
    ]


@dataclass(frozen=True)
class ClusterFiles:
    """Where one cluster keeps its PKI, kubeconfigs and logs."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    def kubeconfig(self, component: str) -> Path:
        return self.root / f"{component}.kubeconfig"

    def log(self, component: str) -> Path:
        return self.root / "logs" / f"{component}.log"

    @property
    def audit_policy(self) -> Path:
        return self.root / "audit-policy.yaml"

    @property
    def audit_log(self) -> Path:
        return self.root / "logs" / "audit.jsonl"


# Every write request (who, which object, when, the answer), none of the reads.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
"""


def audit_flags(files: ClusterFiles) -> list[str]:
    """Flags that make kube-apiserver log every write as one JSON line (``files.audit_log``)."""
    return [
        f"--audit-policy-file={files.audit_policy}",
        f"--audit-log-path={files.audit_log}",
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        "--audit-log-maxsize=200",
    ]


def etcd_argv(bin_dir: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    return [
        str(bin_dir / "etcd"),
        "--name=fleet",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=fleet={peer}",
        "--initial-cluster-state=new",
        # A throwaway local store: durability is not worth an fsync per write here.
        "--unsafe-no-fsync",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
    ]


def apiserver_argv(
    bin_dir: Path,
    files: ClusterFiles,
    port: int,
    etcd_port: int,
    cluster: str,
    *,
    light: bool = False,
    audit: bool = False,
) -> list[str]:
    """kube-apiserver of one cluster; ``light`` trims it for memory, ``audit`` logs every write."""
    pki = files.pki
    extra = (light_apiserver_flags() if light else []) + (audit_flags(files) if audit else [])
    return [
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--etcd-prefix=/registry/{cluster}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        "--authorization-mode=RBAC",
        "--anonymous-auth=false",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--enable-priority-and-fairness=false",
        "--profiling=false",
        "--v=1",
        *extra,
    ]


def controller_manager_argv(bin_dir: Path, files: ClusterFiles) -> list[str]:
    kubeconfig = files.kubeconfig("kube-controller-manager")
    return [
        str(bin_dir / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={files.pki / 'sa.key'}",
        f"--root-ca-file={files.pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={files.pki / 'ca.crt'}",
        f"--cluster-signing-key-file={files.pki / 'ca.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
        "--concurrent-gc-syncs=5",
        "--v=1",
    ]


def scheduler_argv(bin_dir: Path, files: ClusterFiles) -> list[str]:
    kubeconfig = files.kubeconfig("kube-scheduler")
    return [
        str(bin_dir / "kube-scheduler"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
        "--v=1",
    ]


POD_CIDR = "10.244.0.1/16"


def kwok_argv(
    bin_dir: Path, files: ClusterFiles, config: Path | None = None, pod_cidr: str = POD_CIDR
) -> list[str]:
    """kwok for one cluster; ``config`` is a kwok config file with the Stage objects to run pods by."""
    argv = [
        str(bin_dir / "kwok"),
        f"--kubeconfig={files.kubeconfig('kwok')}",
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--manage-nodes-with-label-selector=",
        f"--cidr={pod_cidr}",
        "--node-ip=10.244.0.1",
        "--node-lease-duration-seconds=40",
        "--server-address=",
    ]
    if config is not None:
        argv.append(f"--config={config}")
    return argv
