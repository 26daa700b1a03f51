"""The fleet picture the agent's page shows, folded from what feeds the CLI, the logs and the metrics:
the pass's typed events (``PassEvent``) as they happen and the clusters' recorded states
(``ClusterSyncState``) a pass ends with.

Pure: every function takes the picture so far and returns the next one; nothing here reads a
cluster, git or a clock, and nothing decides about the rollout. A wave's state is its phase in the
rollout's status (``syncer.domain.rollout_status``), the same that ``syncer_wave_state`` shows; no
meaning is read out of text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from syncer.config.trace_links import TraceLinks
from syncer.domain.progress import PassEvent, Step
from syncer.domain.revision_history import HistoryEntry
from syncer.domain.rollout_records import reconcile
from syncer.domain.rollout_status import RolloutStatus, WavePhase, WaveStatus, advance
from syncer.domain.rollout_status import initial as initial_rollout
from syncer.domain.sync_state import ClusterSyncState
from syncer.errors import GuardFailure, GuardRejected
from syncer.status.fleet_detail import (
    SHORT_SHA,
    ClusterDetail,
    ObjectView,
    detail_json,
    fold_detail,
    objects_json,
)

PENDING = WavePhase.PENDING.value
"""The state of a wave no event of the revision rolling out has reached yet."""

# Steps that tell a cluster could not be reached, and the ones after which it answered again.
_UNREACHABLE_STEPS = frozenset({Step.CLUSTER_UNREACHABLE})
_ERROR_STEPS = frozenset({Step.APPLY_FAILED, Step.DRIFT_REPAIR_FAILED, Step.ROLLBACK_UNAVAILABLE})


@dataclass(frozen=True)
class RevisionView:
    """One revision as the page names it: its commit id, the signer the trust policy knows the key
    by, and the commit's subject."""

    sha: str
    signer: str = ""
    subject: str = ""

    @property
    def short(self) -> str:
        return self.sha[:SHORT_SHA]


@dataclass(frozen=True)
class ClusterView:
    """One cluster's cell: what it records (revision, phase, health, suspension, last error), whether
    the agent could reach it (``unreachable`` says why not), the last step a pass told of it, and
    what its detail shows beyond that (``detail``)."""

    name: str
    wave: str = ""
    revision: str = ""
    phase: str = ""
    health: str = ""
    health_detail: str = ""
    unreachable: str = ""
    suspended: str = ""
    last_error: str = ""
    trace_id: str = ""
    trace_url: str = ""  # the link of trace_id by the config's tracing.urlTemplate ("" without one)
    step: str = ""
    objects: tuple[ObjectView, ...] = ()
    detail: ClusterDetail = field(default_factory=ClusterDetail)


@dataclass(frozen=True)
class WaveView:
    """One wave's column: its phase (a ``WavePhase``), what holds it (a ``HoldCause``, for a held
    wave), and why it is in that phase (a gate's verdict, the failure and how its rollback ended)."""

    name: str
    state: str = PENDING
    waiting: str = ""
    reason: str = ""


@dataclass(frozen=True)
class RejectionView:
    """The last tip the revision gate refused, and why (its error, with file:line where a file is
    the cause); ``guards`` the rules and limits it broke when the guard policy refused it."""

    sha: str
    reason: str
    guards: tuple[GuardFailure, ...] = ()


@dataclass(frozen=True)
class FleetView:
    """The whole picture: the revision in force, the one rolling out (None: none is), the last tip
    refused until another revision rolls out, the waves in the policy's order and every cluster by
    name. ``version`` grows with every change."""

    waves: tuple[WaveView, ...] = ()
    clusters: Mapping[str, ClusterView] = field(default_factory=dict)
    in_force: RevisionView | None = None
    rolling: RevisionView | None = None
    rejected: RejectionView | None = None
    version: int = 0
    rollout: RolloutStatus = field(default_factory=RolloutStatus)
    trace_links: TraceLinks = field(default_factory=TraceLinks)


def initial(
    waves: Iterable[str], clusters: Iterable[str], trace_links: TraceLinks = TraceLinks()
) -> FleetView:
    """The picture before any pass: the policy's waves, each pending, and the config's clusters;
    ``trace_links`` makes each cluster's last trace id a link."""
    rollout = initial_rollout(waves)
    return FleetView(
        waves=tuple(_wave_view(w) for w in rollout.waves),
        clusters={name: ClusterView(name) for name in sorted(clusters)},
        rollout=rollout,
        trace_links=trace_links,
    )


def _wave_view(wave: WaveStatus) -> WaveView:
    reason = f"{wave.cause} ({wave.back})" if wave.cause and wave.back else wave.cause or wave.back
    return WaveView(wave.name, wave.phase.value, wave.hold.value if wave.hold else "", reason)


def _fold_cluster(cell: ClusterView, event: PassEvent) -> ClusterView:
    cell = replace(cell, step=event.step.value, wave=event.wave or cell.wave)
    cell = replace(cell, detail=fold_detail(cell.detail, event))
    if event.step in _UNREACHABLE_STEPS:
        return replace(cell, unreachable=event.detail or "unreachable")
    cell = replace(cell, unreachable="")
    if event.health is not None:
        cell = replace(cell, health=event.health.value)
    if event.step is Step.APPLYING and event.revision:
        cell = replace(cell, revision=event.revision, phase="applying", last_error="")
    elif event.step is Step.APPLIED:
        cell = replace(cell, phase="applied")
    elif event.step is Step.ROLLING_BACK:
        cell = replace(cell, phase="rolling-back")
    if event.step in _ERROR_STEPS and event.detail:
        cell = replace(cell, last_error=event.detail)
    return cell


def fold_event(view: FleetView, event: PassEvent) -> FleetView:
    """The picture after ``event``: the rollout's status (its waves), its cluster's cell; a refused
    tip is the rejected one; a revision other than the one in force that starts rolling out (in the
    rollout's status: a rollback's applies of an older revision do not) is the one rolling out, and
    no tip is refused any more."""
    rolling = view.rolling
    rejected = view.rejected
    if event.step is Step.REVISION_REJECTED:
        guards = event.cause.verdicts if isinstance(event.cause, GuardRejected) else ()
        rejected = RejectionView(event.revision, event.detail, guards)
    rollout = advance(view.rollout, event)
    started = rollout.revision if rollout.revision != view.rollout.revision else ""
    if started and (rolling is None or rolling.sha != started):
        in_force = view.in_force.sha if view.in_force else ""
        if started != in_force:
            rolling = RevisionView(started)
            rejected = None
    waves = tuple(_wave_view(w) for w in rollout.waves) if rollout != view.rollout else view.waves
    clusters = dict(view.clusters)
    if event.cluster:
        cell = clusters.get(event.cluster, ClusterView(event.cluster))
        clusters[event.cluster] = _fold_cluster(cell, event)
    return replace(
        view,
        waves=waves,
        rolling=rolling,
        rejected=rejected,
        clusters=clusters,
        rollout=rollout,
        version=view.version + 1,
    )


def _cell_of(
    state: ClusterSyncState,
    before: ClusterView,
    unreachable: str,
    history: tuple[HistoryEntry, ...] | None,
    links: TraceLinks,
) -> ClusterView:
    detail = replace(
        before.detail,
        history=before.detail.history if history is None else history,
        analysis="; ".join(
            filter(
                None,
                [
                    state.analysis.summary() if state.analysis.revision == state.revision else "",
                    f"background: {state.background.summary()}"
                    if state.background.revision == state.revision and state.background.metrics
                    else "",
                ],
            )
        ),
    )
    return replace(
        before,
        wave=state.wave or before.wave,
        revision=state.revision,
        phase=state.phase.value,
        health=state.health,
        health_detail=state.health_detail,
        unreachable="" if state.suspension.active else unreachable,
        suspended=state.suspension.describe(),
        last_error=state.last_error
        or (state.apply_failure.reason if state.apply_failure else "")
        or state.unknown_record.describe(),
        trace_id=state.trace_id,
        trace_url=links.url(state.trace_id),
        objects=tuple(ObjectView(e.kind, e.namespace, e.name) for e in state.inventory),
        detail=detail,
    )


def fold_states(
    view: FleetView,
    states: Mapping[str, ClusterSyncState],
    unreachable: Mapping[str, str],
    histories: Mapping[str, tuple[HistoryEntry, ...]] | None = None,
) -> FleetView:
    """The picture after a pass read or ended with ``states`` and ``histories``: each cluster's cell
    is what it records (a cluster with no history given keeps the one shown); a cluster the pass
    could not use keeps what it last recorded, marked unreachable with why. A suspended cluster the
    pass left alone is not unreachable."""
    clusters = dict(view.clusters)
    for name, state in states.items():
        before = clusters.get(name, ClusterView(name))
        history = (histories or {}).get(name)
        clusters[name] = _cell_of(state, before, unreachable.get(name, ""), history, view.trace_links)
    for name, why in unreachable.items():
        cell = clusters.get(name, ClusterView(name))
        if not cell.suspended:
            clusters[name] = replace(cell, unreachable=why or "unreachable")
    return replace(view, clusters=dict(sorted(clusters.items())), version=view.version + 1)


def fold_rollout(view: FleetView, rebuilt: RolloutStatus) -> FleetView:
    """The picture with the rollout's status rebuilt from the clusters' records at the end of a pass
    (``syncer.domain.rollout_records``): what the records settle (a failure, an abort, a hold, a
    revision another replica or an earlier process rolled out) wins over what events told."""
    rollout = reconcile(view.rollout, rebuilt)
    if rollout == view.rollout:
        return view
    waves = tuple(_wave_view(w) for w in rollout.waves)
    return replace(view, rollout=rollout, waves=waves, version=view.version + 1)


def fold_revisions(view: FleetView, in_force: RevisionView | None, rolling: RevisionView | None) -> FleetView:
    """The picture with the revision in force and the one rolling out (None: none is)."""
    return replace(view, in_force=in_force, rolling=rolling, version=view.version + 1)


def _revision_json(r: RevisionView | None) -> dict[str, str] | None:
    return None if r is None else {"sha": r.sha, "short": r.short, "signer": r.signer, "subject": r.subject}


def guards_of(view: FleetView) -> tuple[GuardFailure, ...]:
    """The guard failures of the refused tip (none when no tip is refused, or not by the guards)."""
    return view.rejected.guards if view.rejected is not None else ()


def cluster_json(c: ClusterView, guards: tuple[GuardFailure, ...]) -> dict[str, Any]:
    """One cluster's cell and detail as the page's JSON, with those of ``guards`` that concern it."""
    concern = tuple(g for g in guards if g.cluster in ("", c.name))
    return {
        "name": c.name,
        "wave": c.wave,
        "revision": c.revision,
        "short": c.revision[:SHORT_SHA],
        "phase": c.phase,
        "health": c.health,
        "healthDetail": c.health_detail,
        "reachable": not c.unreachable,
        "unreachable": c.unreachable,
        "suspended": c.suspended,
        "lastError": c.last_error,
        "traceId": c.trace_id,
        "traceUrl": c.trace_url,
        "step": c.step,
        "objects": objects_json(c.detail, c.objects, c.revision),
        **detail_json(c.detail, concern),
    }


def frame_json(view: FleetView) -> dict[str, Any]:
    """The picture as the page's JSON but its clusters: the version, revisions and waves."""
    rejected = view.rejected
    return {
        "version": view.version,
        "inForce": _revision_json(view.in_force),
        "rolling": _revision_json(view.rolling),
        "rejected": None
        if rejected is None
        else {"sha": rejected.sha, "short": rejected.sha[:SHORT_SHA], "reason": rejected.reason},
        "waves": [
            {"name": w.name, "state": w.state, "waiting": w.waiting, "reason": w.reason} for w in view.waves
        ],
    }


def to_json(view: FleetView) -> dict[str, Any]:
    """The picture as the page's JSON: plain strings, lists and objects only."""
    guards = guards_of(view)
    return {**frame_json(view), "clusters": [cluster_json(c, guards) for c in view.clusters.values()]}
