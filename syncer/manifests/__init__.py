"""Strict manifest loading, schema validation against the CRD and per-cluster rendering. [reads files only]

Owns: turning a checked-out tree into a DesiredFleet or a ManifestError listing every problem with
file:line:column. It reads files below the directory it is given and nothing else; the repository
format is described in docs/repo-format.md. Must not: do network I/O, call git, run processes or
talk to clusters.
"""

from syncer.manifests.options import NAMESPACE, REDIS_CLUSTER, LoadOptions, ResourceKind
from syncer.manifests.problems import ProblemKind
from syncer.manifests.render import load_fleet

__all__ = ["NAMESPACE", "REDIS_CLUSTER", "LoadOptions", "ProblemKind", "ResourceKind", "load_fleet"]
