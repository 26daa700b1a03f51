"""Leader election and sharding over ``coordination.k8s.io/v1`` Leases, through the ``KubeApi`` seam.

Owns: acquiring, renewing and releasing a Lease (holderIdentity, leaseDurationSeconds, renewTime) and
running a function only while this process holds it; fencing writes on a Lease held; splitting a
fleet's clusters among replicas (``assignment``: pure rendezvous hashing with bounded load;
``shards``: member and per-cluster owner Leases and the per-cluster fence). Must not: know what the
leader or a replica does with what it holds; the controller and the agent both use it.
"""

from syncer.leader.election import LeaderElector, LeaseRecord, LeaseVerdict, judge

__all__ = ["LeaderElector", "LeaseRecord", "LeaseVerdict", "judge"]
