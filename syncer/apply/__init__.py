"""Server-side apply executor: staged apply, prune and conflict policy. [I/O via kube]

Owns: turning one cluster's plan into API calls through syncer.kube (Namespaces and CRDs first, then
the rest, prunes last and only after every apply succeeded; retries with backoff on throttling and
server errors, never on validation errors) and returning a ChangeSet. Must not: decide what to apply
(that is the plan) or when (that is the rollout).
"""

from syncer.apply.executor import ApplyPolicy, ClusterApplier, ConflictPolicy, apply_order
from syncer.apply.retry import RetryPolicy, with_retries

__all__ = ["ApplyPolicy", "ClusterApplier", "ConflictPolicy", "RetryPolicy", "apply_order", "with_retries"]
