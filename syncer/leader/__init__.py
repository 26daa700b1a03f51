"""Leader election over a ``coordination.k8s.io/v1`` Lease, through the ``KubeApi`` seam.

Owns: acquiring, renewing and releasing a Lease (holderIdentity, leaseDurationSeconds, renewTime) and
running a function only while this process holds it. Must not: know what the leader does; the
controller and the agent both use it.
"""

from syncer.leader.election import LeaderElector, LeaseOptions, LeaseRecord, Verdict, judge

__all__ = ["LeaderElector", "LeaseOptions", "LeaseRecord", "Verdict", "judge"]
