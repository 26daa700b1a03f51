"""syncer: a GitOps agent that keeps fleets of Redis clusters on Kubernetes in step with a git repository.

Data flows one way: source -> verify -> manifests -> plan -> rollout -> apply -> health -> status.
Each stage is a package of its own; ``syncer.engine`` runs them in order and the CLI and agent call
the engine. This top-level module only carries the version.
"""

__version__ = "0.1.0.dev0"
