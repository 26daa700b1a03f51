"""The bounds of strict YAML loading, and the budget of parser events shared by the files of one input."""

from __future__ import annotations

from dataclasses import dataclass

KUBECONFIG_BYTES = 16 << 20
"""Bytes a kubeconfig may have (``syncer.config.settings.MAX_KUBECONFIG_BYTES`` states it for the
agent; here for ``syncer.kube``, which reads it)."""

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class YamlLimits:
    """Limits that keep a hostile file from exhausting the process.

    ``max_aliases`` counts alias nodes per file, ``max_nodes`` and ``max_depth`` bound each document
    with every alias expanded, ``max_documents`` the documents of one file and ``max_events`` the YAML
    parser events of one input (a whole revision, or one file of the agent): the work parsing it may
    cost, whatever its shape. Integers are always bounded to 64 bits (``INT64_MIN``..``INT64_MAX``),
    the range Kubernetes and every number of the agent's files fit in.
    """

    max_aliases: int = 100
    max_nodes: int = 100_000
    max_depth: int = 64
    max_documents: int = 1000
    max_events: int = 1_000_000


class EventBudget:
    """The YAML events one input may still cost; shared by every file of the input."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def spend(self) -> bool:
        """Count one event; False once the budget is exceeded."""
        self.used += 1
        return self.used <= self.limit
