"""The arguments the integration tests start ``syncer run`` with."""

from __future__ import annotations

from pathlib import Path


def run_args(root: Path, policy: str, kubeconfig: Path, state_namespace: str, *extra: str) -> list[str]:
    """``syncer run`` arguments: ``agent.yaml`` and the rollout policy file ``policy`` in ``root``, the
    fleet's kubeconfig, free HTTP and probe ports, a poll every 2 s without jitter, a waiting wave's health
    checked every second (a wave proceeds within a second of being healthy and baked, as the in-process
    rollouts of the engine tests do) and drift repair out of the way (every 10 minutes); ``extra`` last."""
    return [
        "--config",
        str(root / "agent.yaml"),
        "--rollout-policy",
        str(root / policy),
        "--kubeconfig",
        str(kubeconfig),
        "--state-namespace",
        state_namespace,
        "--interval",
        "2s",
        "--jitter",
        "0s",
        "--drift-interval",
        "10m",
        "--health-poll",
        "1s",
        "--http-port",
        "0",
        "--probe-port",
        "0",
        *extra,
    ]
