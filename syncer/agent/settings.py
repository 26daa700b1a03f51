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
class AgentSettings:
    """How the agent runs. Intervals are seconds; ``jitter`` spreads polls of many agents."""

    config: Path
    rollout_policy: Path | None = None
    kubeconfig: str = ""
    interval: float = 60.0
    jitter: float = 5.0
    drift_interval: float = 300.0
    state_namespace: str = "syncer-system"
    http_host: str = "0.0.0.0"
    http_port: int = 8080
    hook_secret_file: Path | None = None
    health_poll: float = 5.0
    lease: LeaseSettings = LeaseSettings()
    controller: ControllerSettings = ControllerSettings()
