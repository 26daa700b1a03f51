"""Three-way diff per cluster: desired vs last applied vs live, and ownership of every field. [pure]

Owns: classifying every object of a cluster as create, update, adopt, prune, keep, unchanged,
conflict, drift or error (``dry_runs_needed`` then ``plan_cluster``) with the sync's own rules
(``syncer.domain.rules``: conflict policy, drift repair, prune with proof of ownership, blocked
clusters), attributing each changed field to the field managers that own it live, normalizing server
noise, masking secret values, and the versioned JSON document of a plan with its schema
(``syncer.dev/diff/v3``). Must not: do I/O; live objects, the inventory and the server-side dry-run
predictions are passed in by the engine.
"""

from syncer.plan.classify import (
    ClusterState,
    DryRun,
    PlanOptions,
    Prediction,
    dry_runs_needed,
    plan_cluster,
)
from syncer.plan.document import API_VERSION, cluster_document, diff_schema, fleet_document

__all__ = [
    "API_VERSION",
    "ClusterState",
    "DryRun",
    "PlanOptions",
    "Prediction",
    "cluster_document",
    "diff_schema",
    "dry_runs_needed",
    "fleet_document",
    "plan_cluster",
]
