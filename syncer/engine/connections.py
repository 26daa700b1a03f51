"""Connections to the clusters of a fleet, through kubeconfig contexts.

A cluster named in the agent config's ``clusters:`` is reached through the context (and kubeconfig
file) given there; any other cluster through a context of its own name in the default kubeconfig.
"""

from __future__ import annotations

from collections.abc import Mapping

from syncer.config import ClusterAccess
from syncer.kube import ClientOptions, ClusterClient, KubeApi


class KubeconfigConnections:
    """Opens one client per cluster on request (``connections(name)``) and closes them all at the end."""

    def __init__(
        self,
        clusters: Mapping[str, ClusterAccess],
        kubeconfig: str = "",
        options: ClientOptions = ClientOptions(),
    ) -> None:
        self.clusters = clusters
        self.kubeconfig = kubeconfig
        # The clients' options (a sharded replica names itself in the user agent).
        self.options = options
        self._opened: list[ClusterClient] = []

    def access(self, cluster: str) -> ClusterAccess:
        """Where ``cluster`` is reached: its entry in the config, else a context of its name."""
        return self.clusters.get(cluster) or ClusterAccess(context=cluster)

    def kubeconfig_of(self, access: ClusterAccess) -> str:
        return str(access.kubeconfig) if access.kubeconfig else self.kubeconfig

    def __call__(self, cluster: str) -> KubeApi:
        """A new client for ``cluster``; ConfigError when its kubeconfig or context is unusable."""
        access = self.access(cluster)
        client = ClusterClient.from_kubeconfig(
            self.kubeconfig_of(access), access.context, cluster, self.options
        )
        self._opened.append(client)
        return client

    def close(self) -> None:
        for client in self._opened:
            client.close()
        self._opened.clear()
