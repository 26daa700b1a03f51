"""Run-time settings of the agent process (command-line flags), beside the config file's contents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LeaseSettings:
    """Leader election: a Lease ``namespace/name`` in the home cluster (``context`` of ``kubeconfig``)."""

    enabled: bool = True
    namespace: str = "syncer-system"
    name: str = "syncer-agent"
    kubeconfig: str = ""
    context: str = ""
    duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class ControllerSettings:
    """The embedded controller: off, for the home cluster, or one per target cluster (local fleets)."""

    enabled: bool = False
    every_cluster: bool = False
    watch_namespace: str = ""
    workers: int = 2
    topology: bool = False


@dataclass(frozen=True)
class HttpSettings:
    """The HTTP server of /metrics, /healthz, /readyz and /hooks/git, and the limits that keep one
    client from starving the others.

    ``host`` is the bind address: loopback unless told otherwise (the chart binds all addresses of
    the pod's own network namespace so the kubelet's probes and the Service reach it).
    ``request_timeout`` bounds the time from accepting a connection to having read the request line,
    headers and body; ``io_timeout`` bounds each single read or write; ``max_connections`` bounds the
    connections served at once (more are refused with 503); ``max_body`` bounds a webhook body.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    max_body: int = 1 << 20
    request_timeout: float = 10.0
    io_timeout: float = 5.0
    max_connections: int = 32


@dataclass(frozen=True)
class AgentSettings:
    """How the agent runs. Intervals are seconds; ``jitter`` spreads polls of many agents."""

    config: Path
    rollout_policy: Path | None = None
    kubeconfig: str = ""
    interval: float = 60.0
    jitter: float = 5.0
    drift_interval: float = 300.0
    state_namespace: str = "syncer-system"
    http: HttpSettings = HttpSettings()
    hook_secret_file: Path | None = None
    health_poll: float = 5.0
    lease: LeaseSettings = LeaseSettings()
    controller: ControllerSettings = ControllerSettings()
