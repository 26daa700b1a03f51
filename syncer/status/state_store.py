"""Each cluster's sync state, kept in a ConfigMap in the agent's namespace of that cluster.

Reading never crashes on what it finds: a missing ConfigMap is a cluster never synced, and a corrupt
one (bad JSON, wrong shape, unknown version) is reported and rebuilt from the objects that carry
syncer's managed-by label, so an agent can always resume from the clusters alone.

The revisions that failed on the cluster are kept under a key of their own (``FAILURES_KEY``), written
with the state: a corrupt state is rebuilt without losing them. A person's ``syncer retry`` and
window override are keys of their own too, under their own field managers, so the agent's state
writes never drop them. The cluster's history of revisions (``syncer.status.history``) is kept under
its own key, written in the same fenced write as the state that starts or settles an entry.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from syncer.config.settings import AGENT_NAMESPACE, HISTORY_KEEP
from syncer.domain.analysis import AnalysisRecord, MetricCounts
from syncer.domain.applied import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from syncer.domain.changeset import FailureCause
from syncer.domain.gates import AwaitingPromotion
from syncer.domain.revision_history import Actor, HistoryEntry, note
from syncer.domain.sync_state import (
    ClusterSyncState,
    FailedRevision,
    InventoryEntry,
    SyncPhase,
    UnknownRecord,
)
from syncer.errors import Conflict, FencedOut, HeldSinceRead, NotFound, RecordUnreadable
from syncer.kube import ApplyOptions, KubeApi
from syncer.leader.fence import UNFENCED, Fence
from syncer.status import acts
from syncer.status import record_fields as fields
from syncer.status.acts import ACT_KEYS, with_acts
from syncer.status.history import HISTORY_KEY, encode_history, history_of
from syncer.status.record_fields import StateFormatError

STATE_CONFIGMAP = acts.STATE_CONFIGMAP  # the ConfigMap a cluster keeps its state and the acts in
STATE_KEY = "state.json"
FAILURES_KEY = "failed-revisions.json"
LEGACY_REASON = "recorded before failures kept their cause"
FORMAT_VERSION = 1
STATE_FIELD_MANAGER = "syncer-state"
FENCING_TOKEN = "syncer.dev/fencing-token"
FENCING_LEASE = "syncer.dev/fencing-lease"


def encode(state: ClusterSyncState) -> str:
    data = asdict(state)
    for kept_apart in ("rebuilt", "stored", "failures", *acts.ACT_FIELDS):
        data.pop(kept_apart)
    data["phase"] = str(state.phase)
    return json.dumps({"version": FORMAT_VERSION, "state": data}, sort_keys=True, separators=(",", ":"))


def encode_failures(failures: Iterable[FailedRevision]) -> str:
    """The failed revisions as kept under ``FAILURES_KEY``."""
    document = {"version": FORMAT_VERSION, "failures": [asdict(f) for f in failures]}
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _entries(raw: Any) -> tuple[InventoryEntry, ...]:
    try:
        return tuple(
            InventoryEntry(
                str(e["api_version"]), str(e["kind"]), str(e["namespace"]), str(e["name"]), str(e["uid"])
            )
            for e in raw
        )
    except (KeyError, TypeError) as err:
        raise StateFormatError(f"bad object entry: {err}") from err


def _failure(raw: Any) -> FailedRevision:
    if not isinstance(raw, dict):
        raise StateFormatError("a failed revision must be an object")
    try:
        cause = FailureCause(raw.get("cause", FailureCause.CONTENT))
    except ValueError as err:
        raise StateFormatError(f"bad failure cause: {err}") from err
    return FailedRevision(
        revision=fields.text(raw, "revision"),
        content=fields.text(raw, "content"),
        cause=cause,
        reason=fields.text(raw, "reason"),
        objects=_entries(raw.get("objects", [])),
        fingerprint=fields.text(raw, "fingerprint"),
        at=fields.number(raw, "at"),
    )


def decode_failures(text: str) -> tuple[FailedRevision, ...]:
    """The failed revisions kept under ``FAILURES_KEY``; StateFormatError says what is wrong."""
    try:
        document = json.loads(text)
    except ValueError as err:
        raise StateFormatError(f"not JSON: {err}") from err
    if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
        raise StateFormatError(f"unknown format (expected version {FORMAT_VERSION})")
    found = document.get("failures")
    if not isinstance(found, list):
        raise StateFormatError("failures must be a list")
    return tuple(_failure(f) for f in found)


def _legacy_failures(raw: Mapping[str, Any]) -> tuple[FailedRevision, ...]:
    """``bad_revisions`` and ``bad_contents`` of a state written before failures kept their cause:
    each a content failure, as they were judged then."""
    listed = {}
    for key in ("bad_revisions", "bad_contents"):
        listed[key] = raw.get(key, [])
        if not isinstance(listed[key], list) or not all(isinstance(r, str) for r in listed[key]):
            raise StateFormatError(f"{key} must be a list of strings")
    return (
        *(FailedRevision(r, reason=LEGACY_REASON) for r in listed["bad_revisions"]),
        *(FailedRevision("", c, reason=LEGACY_REASON) for c in listed["bad_contents"]),
    )


def decode(cluster: str, text: str) -> ClusterSyncState:
    """The state in ``text``; StateFormatError says what is wrong with it."""
    try:
        document = json.loads(text)
    except ValueError as err:
        raise StateFormatError(f"not JSON: {err}") from err
    if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
        raise StateFormatError(f"unknown format (expected version {FORMAT_VERSION})")
    raw = document.get("state")
    if not isinstance(raw, dict):
        raise StateFormatError("no state object")
    try:
        inventory = _entries(raw.get("inventory", []))
        phase = SyncPhase(raw.get("phase", SyncPhase.NEVER))
    except (StateFormatError, ValueError) as err:
        raise StateFormatError(f"bad inventory or phase: {err}") from err
    failed = raw.get("apply_failure")
    return ClusterSyncState(
        cluster=cluster,
        revision=fields.text(raw, "revision"),
        phase=phase,
        wave=fields.text(raw, "wave"),
        inventory=inventory,
        health=fields.text(raw, "health"),
        health_detail=fields.text(raw, "health_detail"),
        last_good=fields.text(raw, "last_good"),
        failures=_legacy_failures(raw),
        apply_failure=None if failed is None else _failure(failed),
        degraded_before=fields.text(raw, "degraded_before"),
        last_error=fields.text(raw, "last_error"),
        trace_id=fields.text(raw, "trace_id"),
        applied_at=fields.number(raw, "applied_at"),
        healthy_since=fields.number(raw, "healthy_since"),
        updated_at=fields.number(raw, "updated_at"),
        window=fields.text(raw, "window"),
        window_at=fields.number(raw, "window_at"),
        awaiting=_awaiting(raw.get("awaiting")),
        analysis=_analysis(raw.get("analysis")),
        background=_analysis(raw.get("background")),
        unknown_record=_unknown_record(raw.get("unknown_record")),
    )


def _unknown_record(raw: Any) -> UnknownRecord:
    """The ignored unknown commit the state records (none when absent)."""
    if raw is None:
        return UnknownRecord()
    if not isinstance(raw, dict):
        raise StateFormatError("unknown_record must be an object")
    return UnknownRecord(fields.text(raw, "revision"), fields.number(raw, "at"), fields.text(raw, "in_force"))


def _awaiting(raw: Any) -> AwaitingPromotion:
    """The manual gate the state records its wave waits at (none when absent)."""
    if raw is None:
        return AwaitingPromotion()
    if not isinstance(raw, dict):
        raise StateFormatError("awaiting must be an object")
    return AwaitingPromotion(
        fields.text(raw, "wave"), fields.text(raw, "revision"), fields.number(raw, "since")
    )


def _analysis(raw: Any) -> AnalysisRecord:
    """The analysis counts recorded with the state (none when absent: a state written before them)."""
    if raw is None:
        return AnalysisRecord()
    if not isinstance(raw, dict) or not isinstance(raw.get("metrics", []), list):
        raise StateFormatError("analysis must be an object with a list of metrics")
    metrics = []
    for entry in raw.get("metrics", []):
        if not isinstance(entry, dict):
            raise StateFormatError("analysis metrics must be objects")
        last = entry.get("last_value")
        if last is not None and (isinstance(last, bool) or not isinstance(last, int | float)):
            raise StateFormatError("last_value must be a number or null")
        whole = {k: int(fields.number(entry, k)) for k in _COUNTS}
        metrics.append(
            MetricCounts(
                fields.text(entry, "metric"),
                **whole,
                last_at=fields.number(entry, "last_at"),
                last_value=last,
            )
        )
    return AnalysisRecord(fields.text(raw, "revision"), fields.number(raw, "started"), tuple(metrics))


_COUNTS = ("taken", "successes", "failures", "inconclusive", "errors", "consecutive_errors")


def inventory_of(objects: Iterable[Mapping[str, Any]]) -> tuple[InventoryEntry, ...]:
    """Inventory entries of live objects that carry syncer's managed-by label."""
    entries = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if (meta.get("labels") or {}).get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
            continue
        entries.append(
            InventoryEntry(
                str(obj.get("apiVersion", "")),
                str(obj.get("kind", "")),
                str(meta.get("namespace", "")),
                str(meta.get("name", "")),
                str(meta.get("uid", "")),
            )
        )
    return tuple(sorted(entries))


@dataclass(frozen=True)
class LoadedState:
    """A cluster's state and, when it had to be rebuilt, why; ``configmap`` is the ConfigMap as it
    was read (empty when there was none; None when not known), which a later write is tied to
    (``StateStore.seen``)."""

    state: ClusterSyncState
    problem: str = ""
    configmap: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


def stored_token(configmap: Mapping[str, Any]) -> int:
    """The fencing token of the writer that last wrote a state ConfigMap (0: none recorded)."""
    raw = str(((configmap.get("metadata") or {}).get("annotations") or {}).get(FENCING_TOKEN, "0"))
    return int(raw) if raw.isdigit() and len(raw) <= 18 else 0


def stored_lease(configmap: Mapping[str, Any]) -> str:
    """The Lease whose token a state ConfigMap records ("" when none, or written before it was named)."""
    return str(((configmap.get("metadata") or {}).get("annotations") or {}).get(FENCING_LEASE, ""))


class StateStore:
    """Reads and writes one cluster's sync state through the KubeApi seam.

    With a ``fence`` whose token is above 0, every write records the token in the ConfigMap and is
    refused (``FencedOut``) when the ConfigMap already records a higher one: a deposed leader cannot
    overwrite what a newer leader wrote. The read and the write are tied by the resourceVersion, so
    a write in between makes ours fail and be judged again. Each write keeps the cluster's history
    of revisions (at most ``keep`` entries) up to date with the state it writes.
    """

    def __init__(
        self,
        kube: KubeApi,
        namespace: str = AGENT_NAMESPACE,
        fence: Fence = UNFENCED,
        keep: int = HISTORY_KEEP,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.fence = fence
        self.keep = keep
        self._namespace_ready = False
        # The ConfigMap as last read or written here (None: not seen yet): a write is tied to it by
        # its resourceVersion, so a write by anyone in between makes ours fail and be judged again.
        self._seen: Mapping[str, Any] | None = None

    def load(self, managed_kinds: Iterable[tuple[str, str]] = ()) -> LoadedState:
        """The stored state; a missing one is a fresh state, a corrupt one is rebuilt from the objects
        of ``managed_kinds`` ((apiVersion, kind) pairs) that carry the managed-by label."""
        cluster = self.kube.cluster
        try:
            configmap = self.kube.get("v1", "ConfigMap", STATE_CONFIGMAP, self.namespace)
        except NotFound:
            self._seen = {}
            return LoadedState(ClusterSyncState(cluster, stored=False), configmap={})
        self._seen = configmap
        loaded = self._decoded(configmap, managed_kinds)
        return replace(loaded, configmap=configmap)

    def seen(self, loaded: LoadedState) -> None:
        """Tie the next write to the ConfigMap ``loaded`` was read from (read by another store of the
        same cluster earlier in the pass); one not known is read again before the write."""
        self._seen = loaded.configmap

    def _decoded(self, configmap: Mapping[str, Any], managed_kinds: Iterable[tuple[str, str]]) -> LoadedState:
        cluster = self.kube.cluster
        data = configmap.get("data") or {}
        text = data.get(STATE_KEY, "")
        where = f"sync state ConfigMap {self.namespace}/{STATE_CONFIGMAP}"
        problems = []
        try:
            person_only = not text and any(k in data for k in ACT_KEYS)  # a person's act, no sync yet
            state = ClusterSyncState(cluster, stored=False) if person_only else decode(cluster, text)
        except StateFormatError as err:
            problems.append(f"{where} is unreadable ({err}); rebuilt")
            state = self.rebuild(managed_kinds)
        failures = state.failures
        if FAILURES_KEY in data:
            try:
                failures = decode_failures(data[FAILURES_KEY])
            except StateFormatError as err:
                problems.append(f"{where}: {FAILURES_KEY} is unreadable ({err}); failed revisions forgotten")
        kept = with_acts(replace(state, failures=failures), configmap)
        return LoadedState(kept, "; ".join(problems))

    def rebuild(self, managed_kinds: Iterable[tuple[str, str]]) -> ClusterSyncState:
        """A state whose inventory is every labelled object of ``managed_kinds``; the revision is unknown."""
        objects: list[Mapping[str, Any]] = []
        for api_version, kind in managed_kinds:
            try:
                objects += self.kube.list(
                    api_version, kind, label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
                ).items
            except NotFound:
                continue  # the kind is not served (e.g. the CRD is not installed yet)
        return ClusterSyncState(self.kube.cluster, inventory=inventory_of(objects), rebuilt=True)

    def save(
        self,
        state: ClusterSyncState,
        now: float | None = None,
        actor: Actor = Actor(),
        held: Callable[[ClusterSyncState], bool] | None = None,
    ) -> ClusterSyncState:
        """Write ``state`` (stamped with ``updated_at``) and the history it makes (written by
        ``actor``), creating the namespace if needed; FencedOut when a newer leader's token is
        recorded.

        The write is tied to the ConfigMap as read (its resourceVersion): when someone wrote it
        since (the apiserver's 409), it is read again and the write judged again. ``held``: a write
        a person's act may forbid (one that starts a revision): when the acts the ConfigMap records
        make ``held`` true of ``state``, nothing is written and HeldSinceRead is raised
        (``learnt`` gives the cluster's state with those acts)."""
        stamped = replace(
            state, updated_at=now if now is not None else time.time(), rebuilt=False, stored=True
        )
        self._ensure_namespace()
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": STATE_CONFIGMAP,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/part-of": "syncer", "syncer.dev/role": "sync-state"},
            },
            "data": {STATE_KEY: encode(stamped), FAILURES_KEY: encode_failures(stamped.failures)},
        }
        token, lease = self.fence.token, self.fence.lease
        if token:
            body["metadata"]["annotations"] = {FENCING_TOKEN: str(token), FENCING_LEASE: lease}
        for attempt in range(2):
            current = self._seen if self._seen is not None and not attempt else self._read()
            if held is not None and held(with_acts(stamped, current)):
                cluster = self.kube.cluster
                raise HeldSinceRead(f"{cluster}: a person's act recorded since it was read holds it")
            self._refuse_stale(stored_token(current), stored_lease(current), token, lease)
            body["data"][HISTORY_KEY] = self._history(current, stamped, actor)
            version = (current.get("metadata") or {}).get("resourceVersion")
            body["metadata"].pop("resourceVersion", None)
            if version:
                body["metadata"]["resourceVersion"] = version
            try:
                options = ApplyOptions(field_manager=STATE_FIELD_MANAGER, force=True)
                self._seen = self.kube.apply(body, options)
                # A person's act written since the state was read (a suspension, an override) is
                # learnt here, before the caller acts on the state it saved.
                return with_acts(stamped, self._seen)
            except Conflict:
                if attempt:
                    raise
        return stamped

    def history(self) -> tuple[HistoryEntry, ...]:
        """The history of revisions the ConfigMap records as last read or written here (none when
        not read yet); RecordUnreadable when it cannot be read."""
        return history_of(self._seen or {}, self.kube.cluster)

    def learnt(self, state: ClusterSyncState) -> ClusterSyncState:
        """``state`` with the person's acts of the ConfigMap as last read or written here (no I/O)."""
        return with_acts(state, self._seen or {})

    def with_acts(self, state: ClusterSyncState) -> ClusterSyncState:
        """``state`` with the person's acts the cluster records now (one read of the ConfigMap), for
        a rollout that waits without writing (a bake) and must learn an abort meanwhile."""
        return with_acts(state, self._read())

    def _history(self, current: Mapping[str, Any], state: ClusterSyncState, actor: Actor) -> str:
        """The history ``current`` keeps, after ``state`` is written; an unreadable one (written by
        hand, or by a newer version) is started again rather than stop the rollout for it."""
        try:
            before = history_of(current, self.kube.cluster)
        except RecordUnreadable:
            before = ()
        return encode_history(note(before, state, state.updated_at, actor, self.keep))

    def _read(self) -> Mapping[str, Any]:
        try:
            self._seen = self.kube.get("v1", "ConfigMap", STATE_CONFIGMAP, self.namespace)
        except NotFound:
            self._seen = {}
        return self._seen

    def refusal(self, loaded: LoadedState) -> str:
        """Why this writer may write nothing at all to the cluster ``loaded`` was read from (empty:
        it may): the state records a fencing token this writer's would be refused against (it holds
        no Lease, or a newer holder of its Lease wrote it). Asked before any write of a pass, drift
        repair included, so that no object is written ahead of a state write that would be refused."""
        configmap = loaded.configmap or {}
        try:
            self._refuse_stale(
                stored_token(configmap), stored_lease(configmap), self.fence.token, self.fence.lease
            )
        except FencedOut as err:
            return str(err)
        return ""

    def _refuse_stale(self, recorded: int, recorded_lease: str, token: int, lease: str) -> None:
        """FencedOut when a write with ``token`` of ``lease`` must not replace what the state records:
        a writer holding no Lease may never replace (nor drop) a recorded token, and a holder of the
        same Lease with an older token was deposed. A token of another Lease (the fleet moved from one
        leader to sharded replicas, or back) is not comparable: the newer writer takes over."""
        if not recorded:
            return
        cluster = self.kube.cluster
        if not token:
            raise FencedOut(
                f"not writing the sync state of {cluster}: it is written under the Lease "
                f"{recorded_lease or 'of a leader'} (fencing token {recorded}), and this writer holds no "
                "Lease; run it with leader election (the default) so that it takes the Lease first"
            )
        if recorded > token and recorded_lease in {"", lease}:
            raise FencedOut(
                f"not writing the sync state of {cluster}: a newer holder of the Lease "
                f"{lease} wrote it (fencing token {recorded} > ours, {token})"
            )

    def _ensure_namespace(self) -> None:
        if self._namespace_ready:
            return
        try:
            self.kube.get("v1", "Namespace", self.namespace)
        except NotFound:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            self.kube.apply(body, ApplyOptions(field_manager=STATE_FIELD_MANAGER))
        self._namespace_ready = True
