"""Cluster-side sync state, Prometheus metrics and Kubernetes Events. [I/O via kube]

Owns: recording what happened so a restarted agent can resume. Must not: make rollout decisions.
"""
