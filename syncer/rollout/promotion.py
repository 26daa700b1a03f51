"""Manual gates: whether a wave held for a person's promotion may start, how many people must
promote it, and whether a person aborted the revision in flight. [pure]

A wave with ``approval: manual`` starts only once the clusters of the wave record a promotion
(``syncer promote``) naming the wave and the waiting revision, by as many distinct people as the
trust policy's two-person rules ask for the clusters of the wave (the rule's ``signers``, for a rule
whose ``clusters`` selector selects one of them; one person otherwise). A wave that already started
on the revision (a cluster of it records the revision) is not held again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from syncer.config.two_person import TwoPersonRule
from syncer.domain.gates import Abort, PromotedBy, Promotion
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.errors import GateRefused
from syncer.rollout.gate import Decision, GateVerdict
from syncer.rollout.revision_names import resolve
from syncer.rollout.waves import Wave


@dataclass(frozen=True)
class PromotionCheck:
    """Whether a wave may start: ``open``, why (``reason``), and the people who promoted it."""

    open: bool
    reason: str = ""
    people: tuple[str, ...] = ()


def people_needed(rules: Sequence[TwoPersonRule], labels: Mapping[str, Mapping[str, str]]) -> int:
    """How many distinct people must promote a wave whose clusters have ``labels``: the most
    ``signers`` of a cluster rule selecting one of them, else one."""
    needed = [
        rule.signers
        for rule in rules
        if rule.clusters is not None and any(rule.clusters.matches(lab) for lab in labels.values())
    ]
    return max(needed, default=1)


def judge_promotion(
    wave: Wave, states: Mapping[str, ClusterSyncState], revision: str, needed: int = 1
) -> PromotionCheck:
    """Whether ``wave`` may start rolling out ``revision`` (see the module docstring)."""
    if not wave.gate.manual:
        return PromotionCheck(True)
    recorded = [states[name] for name in wave.clusters if name in states]
    if any(state.revision == revision for state in recorded):
        return PromotionCheck(True, "already started")
    people = tuple(
        dict.fromkeys(
            person
            for state in recorded
            if state.promotion.names(wave.name, revision)
            for person in state.promotion.people
        )
    )
    if len(people) >= needed:
        return PromotionCheck(True, f"promoted by {', '.join(people)}", people)
    reason = f"waiting for promote of {revision[:12]} at wave {wave.name}"
    if needed > 1:
        by = f": {', '.join(people)}" if people else ""
        reason += f" ({len(people)} of {needed} distinct people{by})"
    return PromotionCheck(False, reason, people)


def abort_of(clusters: Sequence[str], states: Mapping[str, ClusterSyncState], revision: str) -> Abort | None:
    """The abort of ``revision`` one of ``clusters`` records and no retry made since lifts there."""
    for name in clusters:
        state = states.get(name)
        if state is None or state.abort.revision != revision or not state.abort.active:
            continue
        if not state.retry.lifts(state.abort):
            return state.abort
    return None


def judge_abort(wave: Wave, states: Mapping[str, ClusterSyncState], revision: str) -> GateVerdict | None:
    """The end of ``wave`` when a person aborted ``revision`` (None: nobody did): its clusters that
    record the revision fail with the abort's reason and are rolled back (``rollback``); a wave with
    none of them halts (nothing to put back)."""
    abort = abort_of(wave.clusters, states, revision)
    if abort is None:
        return None
    reason = abort.describe()
    on_it = tuple(n for n in wave.clusters if n in states and states[n].revision == revision)
    decision = Decision.ROLLBACK if on_it else Decision.HALT
    reasons = tuple((n, reason) for n in on_it)
    return GateVerdict(decision, reason, failed=on_it, reasons=reasons, aborted=True)


# The phases of a cluster whose revision is in flight: applied, not yet judged healthy by its gate.
_IN_FLIGHT = frozenset({SyncPhase.APPLYING, SyncPhase.APPLIED, SyncPhase.FAILED})


def promotion_target(
    states: Mapping[str, ClusterSyncState], wave: str, revision: str
) -> tuple[str, tuple[str, ...]]:
    """The revision ``wave`` waits to be promoted with, named by ``revision``, and the clusters that
    record the wait; ``GateRefused`` (with what does wait) when ``revision`` is not the one."""
    held = {
        n: s.awaiting.revision for n, s in states.items() if s.awaiting.active and s.awaiting.wave == wave
    }
    if not held:
        raise GateRefused(
            f"refused: wave {wave} waits for no promotion (no cluster records it at a manual gate)"
        )
    full = resolve(revision, held.values(), f"wave {wave} waits for promote of")
    return full, tuple(sorted(n for n, r in held.items() if r == full))


def with_promoter(existing: Promotion, wave: str, revision: str, promoter: PromotedBy) -> Promotion:
    """The promotion of ``revision`` at ``wave`` with ``promoter`` added to those ``existing`` has
    for the same wave and revision (one per person: the latest)."""
    kept = existing.promoters if existing.names(wave, revision) else ()
    return Promotion(wave, revision, (*(a for a in kept if a.by != promoter.by), promoter))


def abort_target(states: Mapping[str, ClusterSyncState], revision: str = "") -> tuple[str, tuple[str, ...]]:
    """The revision in flight ``revision`` names (the only one in flight when empty) and the
    clusters that record it (applied or waiting at a manual gate); ``GateRefused`` otherwise."""
    flying = {s.revision for s in states.values() if s.revision and s.phase in _IN_FLIGHT}
    flying |= {s.awaiting.revision for s in states.values() if s.awaiting.active}
    if not flying:
        raise GateRefused("refused: no revision is in flight: nothing to abort")
    known = sorted(flying)
    if not revision.strip() and len(known) > 1:
        listed = ", ".join(r[:12] for r in known)
        raise GateRefused(f"refused: several revisions are in flight ({listed}): name one with --revision")
    full = known[0] if not revision.strip() else resolve(revision, known, "in flight is")
    clusters = (n for n, s in states.items() if full in (s.revision, s.awaiting.revision))
    return full, tuple(sorted(clusters))
