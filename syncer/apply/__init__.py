"""Server-side apply executor: staged apply, dry-run, prune and conflict policy. [I/O via kube]

Owns: turning one cluster's plan into API calls through syncer.kube and returning a ChangeSet.
Must not: decide what to apply (that is the plan) or when (that is the rollout).
"""
