"""The membership label on a RedisCluster's pods, and whether its client Service selects by it.

Owns: which pods gain or lose ``model.LABEL_MEMBER`` after a topology pass (``changes``, pure: a
pod whose node the pass counts as a member gains it; a pod whose node is outside the cluster, or
that departs, loses it; a pod whose node was not judged keeps what it has), writing it (server-side
apply of the pod's labels alone, with the controller's field manager and the listed pod's uid as a
precondition, so a pod re-created since the listing is never labelled on its predecessor's word),
and whether the client Service selects members only (``members_only``).

Must not: talk to Redis, or touch the pod template, the StatefulSets' or budgets' selectors or the
headless Service (peers need every pod's DNS name and bus port).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from syncer.controller.children import client_service
from syncer.controller.model import FIELD_MANAGER, LABEL_INSTANCE, LABEL_MEMBER, ClusterSpec
from syncer.controller.topology_link import Pod, TopologyPass, listed
from syncer.controller.topology_members import Membership
from syncer.errors import Conflict, Invalid, NotFound
from syncer.kube import ApplyOptions, KubeApi

log = logging.getLogger(__name__)
APPLY = ApplyOptions(field_manager=FIELD_MANAGER)
LABEL_WRITERS = 8  # pods labelled at once


@dataclass(frozen=True)
class MembershipChange:
    pod: Pod
    member: bool


def departing(spec: ClusterSpec, pod: Pod) -> bool:
    return not 0 <= pod.shard < spec.shards or pod.ordinal >= spec.pods_per_shard


def changes(spec: ClusterSpec, pods: Sequence[Pod], judged: Membership | None) -> list[MembershipChange]:
    """The label changes a pass asks for; ``judged`` None (no pass judged the nodes) changes only
    departing pods, which lose the label whatever Redis says."""
    found: list[MembershipChange] = []
    for pod in pods:
        if departing(spec, pod):
            wanted = False
        elif judged is None or not pod.ip:
            continue
        else:
            wanted = listed(pod, judged)
        if wanted != pod.member:
            found.append(MembershipChange(pod, wanted))
    return found


def write(kube: KubeApi, spec: ClusterSpec, change: MembershipChange) -> bool:
    """Apply the pod's membership label (or its removal: the label left out of what the controller
    applies); False when the pod is gone or was replaced since it was listed."""
    meta = {
        "name": change.pod.name,
        "namespace": spec.namespace,
        "uid": change.pod.uid,
        "labels": {LABEL_MEMBER: "true"} if change.member else {},
    }
    try:
        kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": meta}, APPLY)
    except (NotFound, Conflict, Invalid) as err:
        # A pod deleted (an apply would create it, without a spec: Invalid) or re-created with
        # another uid (Conflict) since the listing: its successor is judged by the next pass.
        log.info("pod %s/%s not labelled: %s", spec.namespace, change.pod.name, err)
        return False
    return True


def members_only(kube: KubeApi, spec: ClusterSpec, labelled: bool) -> bool:
    """Whether the client Service selects members only: once some pod carries the label
    (``labelled``), or when it already does, or when there is no client Service yet. A Service of
    the controller before the label existed keeps selecting every pod until the members are
    labelled, so it never goes empty for a healthy cluster."""
    if labelled:
        return True
    found = kube.list(
        "v1", "Service", namespace=spec.namespace, label_selector=f"{LABEL_INSTANCE}={spec.name}"
    )
    name = client_service(spec)["metadata"]["name"]
    live = next((s for s in found.items if s["metadata"]["name"] == name), None)
    if live is None:
        return True
    return LABEL_MEMBER in ((live.get("spec") or {}).get("selector") or {})


def settle(kube: KubeApi, spec: ClusterSpec, found: TopologyPass) -> tuple[bool, tuple[str, str] | None]:
    """Label the pods as the pass judged them; whether the client Service selects members only, and
    the Event saying which pods joined or left it (None when none did)."""
    added: list[str] = []
    removed: list[str] = []
    wanted = changes(spec, found.pods, found.membership)
    # Each pod's label is its own write: all at once, as a new cluster's Ready waits for them.
    with ThreadPoolExecutor(max_workers=max(1, min(len(wanted), LABEL_WRITERS))) as pool:
        written = list(pool.map(lambda change: write(kube, spec, change), wanted))
    for change, done in zip(wanted, written, strict=True):
        if done:
            (added if change.member else removed).append(change.pod.name)
    kept = [p for p in found.pods if not departing(spec, p)]
    labelled = any(p.name in added or (p.member and p.name not in removed) for p in kept)
    event = None
    if added or removed:
        parts = [
            f"added {', '.join(added)}" if added else "",
            f"taken out {', '.join(removed)}" if removed else "",
        ]
        event = ("ClientServiceMembers", f"client Service members: {'; '.join(p for p in parts if p)}")
    return members_only(kube, spec, labelled), event
