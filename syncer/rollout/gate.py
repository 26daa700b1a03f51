"""Gate decisions between waves: proceed, wait, halt or roll back. Pure: progress and time in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.health import Health
from syncer.domain.progress import Waiting
from syncer.rollout.waves import Wave

# How long to wait before looking again when nothing else gives a better moment.
RECHECK_SECONDS = 5.0


class Decision(StrEnum):
    PROCEED = "proceed"
    WAIT = "wait"
    HALT = "halt"
    ROLLBACK = "rollback"


@dataclass(frozen=True)
class ClusterProgress:
    """Where one cluster of a wave stands: when its apply finished (None: not yet), the apply error if
    it failed, its health now, and since when it has been healthy without a break (None: it is not)."""

    cluster: str
    applied_at: float | None = None
    apply_error: str = ""
    health: Health = Health.PROGRESSING
    healthy_since: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class GateVerdict:
    """What to do about a wave, why, how long to wait before asking again, which clusters failed
    (``reasons``: each with why), and, when it waits, what for; ``aborted``: a person ended it;
    ``analysis``: the verdict of the wave's analysis when it decided (None: health did);
    ``across``: every cluster on the revision, when the rollout's background analysis failed it
    (they fail with the wave; empty: the wave's own gate decided)."""

    decision: Decision
    reason: str
    wait: float = 0.0
    failed: tuple[str, ...] = ()
    waiting: Waiting | None = None
    reasons: tuple[tuple[str, str], ...] = ()
    aborted: bool = False
    analysis: AnalysisVerdict | None = None
    across: tuple[str, ...] = ()


def judge_wave(
    wave: Wave, progress: Mapping[str, ClusterProgress], now: float, *, rollback: bool
) -> GateVerdict:
    """Judge ``wave`` at time ``now``.

    It fails when an apply failed, a cluster is degraded (its controller reports Stalled), or a
    cluster is not healthy ``health_timeout`` seconds after its apply; then the decision is
    ``rollback`` when ``rollback`` is allowed (policy on and a last good revision exists), else
    ``halt``. It proceeds once every cluster has been healthy for the wave's bake time.
    """
    gate = wave.gate
    failures: dict[str, str] = {}
    waits: list[float] = []
    for name in wave.clusters:
        p = progress.get(name, ClusterProgress(name))
        if p.apply_error:
            failures[name] = f"apply failed: {p.apply_error}"
        elif p.applied_at is None:
            waits.append(RECHECK_SECONDS)
        elif p.health is Health.DEGRADED:
            failures[name] = f"degraded: {p.detail or 'stalled'}"
        elif p.health is not Health.HEALTHY:
            left = p.applied_at + gate.health_timeout - now
            if left <= 0:
                failures[name] = f"not healthy {gate.health_timeout:g}s after apply ({p.health}" + (
                    f": {p.detail})" if p.detail else ")"
                )
            else:
                waits.append(min(left, RECHECK_SECONDS))
    if failures:
        decision = Decision.ROLLBACK if rollback else Decision.HALT
        reason = "; ".join(f"{name}: {why}" for name, why in failures.items())
        return GateVerdict(
            decision, reason, failed=tuple(sorted(failures)), reasons=tuple(sorted(failures.items()))
        )
    if waits:
        pending = sum(
            1 for n in wave.clusters if progress.get(n, ClusterProgress(n)).health is not Health.HEALTHY
        )
        return GateVerdict(
            Decision.WAIT,
            f"{pending} of {len(wave.clusters)} cluster(s) not healthy yet",
            min(waits),
            waiting=Waiting.HEALTH,
        )
    since = max(p.healthy_since or now for p in (progress[n] for n in wave.clusters))
    baked_at = since + gate.bake
    if now < baked_at:
        return GateVerdict(
            Decision.WAIT,
            f"baking: {baked_at - now:.0f}s of {gate.bake:g}s left",
            baked_at - now,
            waiting=Waiting.BAKE,
        )
    return GateVerdict(Decision.PROCEED, f"all {len(wave.clusters)} cluster(s) healthy and baked")
