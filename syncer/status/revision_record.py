"""The fleet's revision in force, recorded once where the fleet's Leases live (the home cluster).

Replicas that split a fleet (``syncer.agent.sharding``) each poll git; two polls a moment apart can
take two different tips. So that every replica rolls out the same revision, the revision in force is
recorded once, in a ConfigMap beside the Leases, with the rollout policy it is rolled out with (its
fingerprint) and the replica that set it. A write is tied to the version read (a replica that read
an older record fails and reads again), so two replicas never both win one change. Whether a
replica may move the record forward, and what it does when it differs, is the engine's decision
(``syncer.engine.fleet_pass``); this module only reads and writes it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from syncer.errors import Conflict, NotFound
from syncer.kube import KubeApi

RECORD_CONFIGMAP = "syncer-revision-in-force"
RECORD_KEY = "revision.json"


@dataclass(frozen=True)
class RevisionInForce:
    """The fleet's revision in force, the fingerprint of the rollout policy it is rolled out with,
    the replica that set it and when (epoch seconds)."""

    revision: str
    policy: str
    set_by: str
    set_at: float
    version: str = ""  # the ConfigMap's resourceVersion when read


def _decode(configmap: dict[str, Any]) -> RevisionInForce | None:
    text = (configmap.get("data") or {}).get(RECORD_KEY, "")
    try:
        raw = json.loads(text) if text else {}
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    revision, policy, set_by, set_at = (raw.get(k) for k in ("revision", "policy", "setBy", "setAt"))
    if not all(isinstance(v, str) for v in (revision, policy, set_by)) or not isinstance(set_at, int | float):
        return None
    version = str((configmap.get("metadata") or {}).get("resourceVersion") or "")
    return RevisionInForce(str(revision), str(policy), str(set_by), float(set_at), version)


class RevisionRecord:
    """Reads and moves the fleet's revision in force in ``namespace`` of the home cluster."""

    def __init__(self, kube: KubeApi, namespace: str, identity: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.identity = identity

    def read(self) -> RevisionInForce | None:
        """The record (None when there is none yet, or it cannot be read as one); KubeError when the
        home cluster does not answer."""
        try:
            configmap = self.kube.get("v1", "ConfigMap", RECORD_CONFIGMAP, self.namespace)
        except NotFound:
            return None
        return _decode(configmap)

    def write(self, revision: str, policy: str, read: RevisionInForce | None) -> RevisionInForce:
        """Set ``revision`` (rolled out with ``policy``) in force if the record is still ``read``;
        when another replica changed it meanwhile, the record as it is now. KubeError when the home
        cluster does not answer."""
        now = time.time()
        data = {"revision": revision, "policy": policy, "setBy": self.identity, "setAt": now}
        metadata: dict[str, Any] = {
            "name": RECORD_CONFIGMAP,
            "namespace": self.namespace,
            "labels": {"app.kubernetes.io/part-of": "syncer", "syncer.dev/role": "revision-in-force"},
        }
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
        body["data"] = {RECORD_KEY: json.dumps(data, sort_keys=True)}
        try:
            if read is None or not read.version:
                written = self.kube.create(body)
            else:
                metadata["resourceVersion"] = read.version
                written = self.kube.replace(body)
        except Conflict:
            winner = self.read()
            if winner is None:
                raise
            return winner
        decoded = _decode(written)
        return decoded if decoded is not None else RevisionInForce(revision, policy, self.identity, now)
