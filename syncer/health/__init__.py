"""RedisCluster and cluster health from status conditions and observedGeneration. [pure]

Owns: kstatus-style verdicts: a RedisCluster is healthy when ``status.observedGeneration ==
metadata.generation``, ``Ready=True`` and not ``Stalled=True``; a cluster is as healthy as the least
healthy object synced to it. Must not: fetch anything; live objects are passed in.
"""

from syncer.health.verdicts import cluster_health, object_health, redis_cluster_health

__all__ = ["cluster_health", "object_health", "redis_cluster_health"]
