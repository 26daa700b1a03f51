"""Cluster-side sync state, Prometheus metrics, Kubernetes Events and logs. [I/O via kube]

Owns: recording what happened in each cluster (the sync-state ConfigMap: applied revision, inventory,
wave, health, last good and bad revisions, a person's acts, and the bounded history of revisions
applied, ``history``) so that a restarted or second agent can resume from the clusters alone,
reporting each pass event as its step's treatment says (``report``), and folding pass events and
recorded states into the fleet page's picture (``fleet_view``, and each cluster's detail there:
``fleet_detail``, both pure). Must not:
make rollout decisions.
"""

from syncer.status.state_store import STATE_CONFIGMAP, LoadedState, StateStore, decode, encode, inventory_of

__all__ = ["STATE_CONFIGMAP", "LoadedState", "StateStore", "decode", "encode", "inventory_of"]
