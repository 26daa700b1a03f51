"""Where the controller meets the Redis topology: pods in, a converged cluster and a verdict out.

Used only when the controller runs with ``topology`` on (pods with real Redis servers behind them).
``observe_and_converge`` runs once all pods of every live StatefulSet are Ready: it hands the kept
shards' pods and the departing ones (shards beyond ``spec.shards``, ordinals beyond the pods per
shard) to ``topology_converge.converge`` and says whether the departing pods may now be deleted.
``prepare_restarts`` moves mastership off pods an upgrade step is about to restart.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from syncer.controller import topology
from syncer.controller.formation import FormationStep
from syncer.controller.model import (
    ANNOTATION_TEMPLATE_HASH,
    LABEL_INSTANCE,
    LABEL_MEMBER,
    LABEL_SHARD,
    REDIS_PORT,
    ClusterSpec,
    ControllerOptions,
    SpecError,
)
from syncer.controller.status import StallCause, TopologyVerdict
from syncer.controller.topology_converge import ConvergeReport, Progress, converge
from syncer.controller.topology_members import Membership
from syncer.controller.topology_restart import RestartPlan, ShardRestart, prepare_restarts
from syncer.errors import FencedOut, SyncerError
from syncer.kube import KubeApi, KubeObject


@dataclass(frozen=True)
class Pod:
    """A pod as listed; ``member``: it carries the membership label (``model.LABEL_MEMBER``)."""

    name: str
    shard: int
    ordinal: int
    ip: str
    ready: bool
    template_hash: str
    uid: str = ""
    member: bool = False

    @property
    def node(self) -> topology.RedisNode:
        return topology.RedisNode(self.ip, REDIS_PORT)


@dataclass(frozen=True)
class TopologyPass:
    """One look at (and converging pass over) the Redis cluster of a RedisCluster."""

    verdict: TopologyVerdict
    departed: bool = False
    masters: Mapping[int, str] = field(default_factory=dict)  # shard -> pod name
    events: tuple[tuple[str, str], ...] = ()
    problem: StallCause | None = None
    pods: tuple[Pod, ...] = ()
    # Which nodes the cluster counts as its own after the pass; None when it judged none (the pods
    # were not all up, a master did not answer, the pass failed).
    membership: Membership | None = None


def _ordinal(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _is_ready(pod: Mapping[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def list_pods(kube: KubeApi, spec: ClusterSpec) -> list[Pod]:
    """Every pod of the cluster, with its shard, ordinal, IP, readiness and template hash."""
    found = kube.list("v1", "Pod", namespace=spec.namespace, label_selector=f"{LABEL_INSTANCE}={spec.name}")
    pods: list[Pod] = []
    for item in found.items:
        meta = item.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        labels = meta.get("labels") or {}
        try:
            shard = int(labels.get(LABEL_SHARD, -1))
        except ValueError:
            continue
        ip = str((item.get("status") or {}).get("podIP") or "")
        annotations = meta.get("annotations") or {}
        pods.append(
            Pod(
                str(meta.get("name", "")),
                shard,
                _ordinal(str(meta.get("name", ""))),
                ip,
                _is_ready(item),
                str(annotations.get(ANNOTATION_TEMPLATE_HASH, "")),
                str(meta.get("uid", "")),
                labels.get(LABEL_MEMBER) == "true",
            )
        )
    return sorted(pods, key=lambda p: (p.shard, p.ordinal))


def settings(
    options: ControllerOptions, password: str | None, tls: Mapping[str, str] | None = None
) -> topology.TopologyOptions:
    """How the controller talks to the cluster's servers: its timeouts, the password and, when
    ``spec.tls`` names a Secret, TLS with that Secret's ``ca.crt``, ``tls.crt`` and ``tls.key``."""
    found = topology.TopologyOptions(
        timeout=options.topology_timeout,
        password=password,
        ready_timeout=options.topology_settle_seconds,
        meet_timeout=options.topology_settle_seconds,
    )
    if tls:
        ca, cert, key = tls_files(tls)
        found = replace(found, tls_ca=ca, tls_cert=cert, tls_key=key)
    return found


def tls_files(data: Mapping[str, str]) -> tuple[str, str | None, str | None]:
    """Write the TLS Secret's files (base64 in ``data``) where redis-py can read them: a directory
    private to this process's user, named after the content, so each content is written once."""
    names = ("ca.crt", "tls.crt", "tls.key")
    contents = {name: base64.b64decode(data[name]) for name in names if name in data}
    if "ca.crt" not in contents:
        raise SpecError("the Secret named by spec.tls.secretRef has no ca.crt to check the servers with")
    digest = hashlib.sha256(b"".join(contents[k] for k in sorted(contents))).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"syncer-tls-{os.getuid()}-{digest}"
    folder.mkdir(mode=0o700, exist_ok=True)
    for name, content in contents.items():
        path = folder / name
        if not path.exists():
            partial = folder / f".{name}.{os.getpid()}"
            partial.write_bytes(content)
            partial.chmod(0o600)
            partial.replace(path)
    cert = str(folder / "tls.crt") if "tls.crt" in contents else None
    key = str(folder / "tls.key") if "tls.key" in contents else None
    return str(folder / "ca.crt"), cert, key


def _waiting(live: Mapping[int, KubeObject], pods: Sequence[Pod]) -> str:
    """Why the pods are not all up yet, or "" when every live StatefulSet's pods are Ready."""
    for index, sts in sorted(live.items()):
        wanted = int((sts.get("spec") or {}).get("replicas") or 0)
        mine = [p for p in pods if p.shard == index]
        ready = [p for p in mine if p.ready and p.ip]
        if len(mine) != wanted or len(ready) != wanted:
            return f"shard {index}: {len(ready)}/{wanted} pods Ready with an IP"
    return ""


def observe_and_converge(
    kube: KubeApi,
    spec: ClusterSpec,
    live: Mapping[int, KubeObject],
    settings: topology.TopologyOptions,
    progress: Progress,
) -> TopologyPass:
    """Converge the Redis cluster towards the spec once every pod is up, and judge it; ``progress``
    is told how many slots have moved while slots move."""
    pods = list_pods(kube, spec)
    waiting = _waiting(live, pods)
    if waiting:
        message = f"waiting for every pod to be Ready before checking the Redis cluster ({waiting})"
        return TopologyPass(TopologyVerdict(False, message, "PodsNotReady"), pods=tuple(pods))
    layout = [
        [p.node for p in pods if p.shard == shard and p.ordinal < spec.pods_per_shard]
        for shard in range(spec.shards)
    ]
    departing = [p.node for p in pods if p.shard >= spec.shards or p.ordinal >= spec.pods_per_shard]
    if any(not shard for shard in layout):
        verdict = TopologyVerdict(False, "a shard has no pod yet", "PodsNotReady")
        return TopologyPass(verdict, pods=tuple(pods))
    settings.told(FormationStep.PODS_READY)
    try:
        result = converge(layout, departing, settings, progress)
    except FencedOut:
        raise  # this controller may no longer act: nothing is judged or written
    except (SyncerError, OSError, ValueError) as err:
        verdict = TopologyVerdict(False, f"Redis topology: {err}", "TopologyError")
        return TopologyPass(verdict, pods=tuple(pods))
    kept = [p for p in pods if p.shard < spec.shards and p.ordinal < spec.pods_per_shard]
    if result.report.healthy:
        settings.told(FormationStep.HEALTHY)
    return held_out(judged(result, pods, bool(departing)), kept)


def listed(pod: Pod, judged: Membership) -> bool:
    """Whether the pod carries the membership label once the pass is over: its node is a member, or
    it had the label and its node was not judged (it did not answer)."""
    return pod.node in judged.members or (pod.member and pod.node not in judged.outside)


def held_out(found: TopologyPass, kept: Sequence[Pod]) -> TopologyPass:
    """The pass with the kept pods that are Ready but not members named in its verdict (and in what
    stalls it): the client Service does not list them. Such a pass is never healthy, though the
    verdict of a healthy cluster already implies every kept node is a member (every node answers,
    knows the others and says ``cluster_state:ok``)."""
    judged = found.membership if found.membership is not None else Membership()
    out = [p.name for p in kept if p.ready and p.ip and not listed(p, judged)]
    if not out:
        return found
    note = f"pod(s) not in the client Service, as their node is not in the Redis cluster: {', '.join(out)}"
    verdict = found.verdict
    if verdict.healthy:
        verdict = TopologyVerdict(False, f"Redis topology unhealthy: {note}", "TopologyUnhealthy")
    else:
        verdict = replace(verdict, message=f"{verdict.message}; {note}")
    problem = found.problem
    if problem is not None:
        problem = replace(problem, message=f"{problem.message}; {note}")
    return replace(found, verdict=verdict, problem=problem)


def judged(result: ConvergeReport, pods: Sequence[Pod], departing: bool) -> TopologyPass:
    """The pass as the status sees it: the verdict, the shards' masters and what stalls it (a node
    left out, or departing nodes that cannot leave yet)."""
    report = result.report
    by_address = {str(p.node): p for p in pods}
    masters: dict[int, str] = {}
    for master in report.masters_with_slots:
        pod = by_address.get(master.master)
        if pod is not None:
            masters[pod.shard] = pod.name
    if report.healthy:
        replicas = report.replica_count
        message = (
            f"cluster_state ok, {report.slots_covered} slots covered by {len(report.masters_with_slots)} "
            f"masters, {replicas} replica(s) in sync"
        )
        verdict = TopologyVerdict(True, message, "Healthy")
    else:
        detail = report.summary()
        if result.problems:
            detail += f"; {result.problems[0]}"
        verdict = TopologyVerdict(False, f"Redis topology unhealthy: {detail}", report.reason)
    problem = None
    if result.refused:
        more = f" (and {len(result.refused) - 1} more)" if len(result.refused) > 1 else ""
        problem = StallCause("NodesLeftOut", f"{result.refused[0]}{more}")
    elif departing and result.problems and not result.departed:
        message = f"nodes cannot leave yet, nothing was deleted: {result.problems[0]}"
        problem = StallCause("ScaleInBlocked", message)
    return TopologyPass(
        verdict, result.departed, masters, result.events, problem, tuple(pods), result.membership
    )


def restarts(
    spec: ClusterSpec,
    pods: Sequence[Pod],
    partitions: Mapping[int, int],
    desired_hash: str,
    settings: topology.TopologyOptions,
) -> RestartPlan:
    """Fail masters over off the pods the given partitions are about to restart; see
    ``topology_restart``."""
    shards: list[ShardRestart] = []
    for shard in range(spec.shards):
        members = [p for p in pods if p.shard == shard and p.ordinal < spec.pods_per_shard and p.ip]
        partition = partitions.get(shard, 0)
        shards.append(
            ShardRestart(
                tuple(p.node for p in members),
                frozenset(
                    p.node for p in members if p.ordinal >= partition and p.template_hash != desired_hash
                ),
                frozenset(p.node for p in members if p.template_hash == desired_hash),
            )
        )
    return prepare_restarts(shards, settings)


def master_ordinal(pods: Sequence[Pod], shard: int, name: str) -> int | None:
    return next((p.ordinal for p in pods if p.shard == shard and p.name == name), None)
