"""Which pass events become notices, of which class and severity: one row per ``Step`` in ``RULES``
(None: no notice), read from the typed fields of the event, never from its text.

Two classes wait for a bound first: a cluster that cannot be reached is told once it has been so
for ``unreachable_after`` seconds, and a wave that waits for a closed maintenance window once it has
waited ``window_wait_after`` seconds (``Bounds``). Pure: the clock is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from syncer.config.settings import NotifySettings
from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.notices import Notice, NoticeClass, Severity
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.rollout_status import ENDED_BADLY, RolloutStatus, advance, initial
from syncer.errors import (
    Conflict,
    GuardRejected,
    ManifestError,
    SyncerError,
    UnexpectedFailure,
    VerificationError,
)


class Bound(Enum):
    """A notice told only once its condition has lasted a while."""

    UNREACHABLE = "unreachable"
    WINDOW = "window"


@dataclass(frozen=True)
class Rule:
    """The notice a step gives: its class, severity, the reason word when the step has one of its
    own (else it comes from the event's error), and the bound it waits for."""

    kind: NoticeClass
    severity: Severity
    reason: str = ""
    bound: Bound | None = None


_FAILED = NoticeClass.WAVE_FAILED
RULES: Mapping[Step, Rule | None] = MappingProxyType(
    {
        Step.SOURCE_FAILED: None,  # git could not be asked: not a verdict on a revision
        Step.REVISION_REJECTED: Rule(NoticeClass.REVISION_REJECTED, Severity.ERROR),
        Step.BASE_IGNORED: None,
        Step.RECORD_UNKNOWN: None,  # told as a Kubernetes Event and shown on the cluster
        Step.LAST_GOOD_UNAVAILABLE: None,
        Step.STATE_REBUILT: None,
        Step.STATE_UNSAVED: None,
        Step.ALREADY_APPLIED: None,
        Step.APPLYING: None,
        Step.APPLIED: None,
        Step.APPLY_FAILED: Rule(_FAILED, Severity.ERROR, "apply-error"),
        Step.GATE_WAIT: Rule(_FAILED, Severity.WARNING, "window-wait", Bound.WINDOW),
        Step.GATE_PROCEED: Rule(NoticeClass.WAVE_PASSED, Severity.INFO, "healthy"),
        Step.GATE_STILL_HEALTHY: None,
        Step.GATE_HALT: Rule(_FAILED, Severity.ERROR, "unhealthy"),  # or the analysis's (ANALYSED)
        Step.GATE_ROLLBACK: Rule(_FAILED, Severity.ERROR, "unhealthy"),
        Step.ROLLING_BACK: None,  # told once done (ROLLED_BACK)
        Step.ROLLED_BACK: Rule(NoticeClass.ROLLBACK_DONE, Severity.WARNING, "rolled-back"),
        Step.NOT_OWNER: None,
        Step.DRIFT_REPAIRED: None,
        Step.DRIFT_REPAIR_FAILED: None,
        Step.DRIFT_REPAIR_WAITING: None,
        Step.CLUSTER_SUSPENDED: None,  # held back by a suspension already told (SUSPENSION_STARTED)
        Step.SUSPENSION_STARTED: Rule(NoticeClass.SUSPENDED, Severity.WARNING, "suspended"),
        Step.SUSPENSION_ENDED: Rule(NoticeClass.RESUMED, Severity.INFO, "resumed"),
        Step.IN_FORCE_WAIT: None,
        Step.HEALTH_CHECKED: None,
        Step.CLUSTER_DEGRADED: None,
        Step.CLUSTER_RECOVERED: None,
        Step.CLUSTER_UNREACHABLE: Rule(
            NoticeClass.CLUSTER_UNREACHABLE, Severity.WARNING, "unreachable", Bound.UNREACHABLE
        ),
        Step.ROLLBACK_UNAVAILABLE: Rule(_FAILED, Severity.ERROR, "rollback-unavailable"),
        Step.NOT_BLAMED: None,
        Step.FENCED_OUT: None,
        Step.SUPERSEDED: None,
        Step.WINDOW_OPEN: None,
        Step.WINDOW_CLOSED: None,  # the wave's wait is told by GATE_WAIT once beyond its bound
        Step.WINDOW_OVERRIDDEN: None,
        Step.ANALYSIS_MEASURED: None,  # a failed analysis is told by the gate's halt or rollback
        Step.CLUSTER_PINNED: None,  # told every pass while the pin holds: the person's act is known
        Step.PIN_UNAVAILABLE: Rule(NoticeClass.REVISION_REJECTED, Severity.ERROR, "pin-unavailable"),
        Step.AWAITING_PROMOTION: Rule(NoticeClass.AWAITING_PROMOTION, Severity.WARNING, "manual-gate"),
        Step.PROMOTED: Rule(NoticeClass.PROMOTED, Severity.INFO, "promoted"),
        Step.ROLLOUT_ABORTED: Rule(NoticeClass.ABORTED, Severity.WARNING, "aborted"),
        Step.ROLLOUT_STARTED: Rule(NoticeClass.ROLLOUT_STARTED, Severity.INFO, "started"),
        Step.ROLLOUT_FINISHED: Rule(NoticeClass.ROLLOUT_FINISHED, Severity.INFO, "healthy"),
    }
)

# The reason word of a gate's decision that followed the wave's analysis, not its health.
ANALYSED: Mapping[AnalysisVerdict, str] = MappingProxyType(
    {
        AnalysisVerdict.FAILED: "analysis-failed",
        AnalysisVerdict.INCONCLUSIVE: "analysis-inconclusive",
        AnalysisVerdict.SUCCESSFUL: "healthy",
        AnalysisVerdict.RUNNING: "analysis-running",
    }
)

# Steps about a cluster that do not show it answers (everything else about it does).
_NOT_AN_ANSWER = frozenset({Step.CLUSTER_UNREACHABLE, Step.STATE_UNSAVED, Step.FENCED_OUT})
# Steps that show a wave no longer waits for its window.
_WAVE_MOVES = frozenset(
    {Step.APPLYING, Step.GATE_PROCEED, Step.GATE_STILL_HEALTHY, Step.GATE_HALT, Step.GATE_ROLLBACK}
)


def reason_of(cause: SyncerError | None, default: str) -> str:
    """The reason word of an event's error value: what refused a revision, or a conflict."""
    if isinstance(cause, VerificationError):
        return "signature"
    if isinstance(cause, ManifestError):
        return "manifests"
    if isinstance(cause, GuardRejected):
        return "guard"
    if isinstance(cause, UnexpectedFailure):
        return "internal-error"
    if isinstance(cause, Conflict):
        return "conflict"
    return default or "rejected"


MAX_COMMAND_CLUSTERS = 5
"""The most clusters a notice gives commands for (the rest: ``syncer status``)."""


def commands_for(
    clusters: tuple[str, ...], contexts: Mapping[str, str], retry_revision: str = ""
) -> tuple[str, ...]:
    """The commands that look closer at ``clusters`` (the fleet when empty) and, with
    ``retry_revision`` (a failure), the ``syncer retry`` of it on each."""
    if not clusters:
        return ("syncer status",)
    commands: list[str] = []
    for cluster in clusters[:MAX_COMMAND_CLUSTERS]:
        commands.append(f"syncer status --cluster {cluster}")
        commands.append(f"kubectl --context {contexts.get(cluster) or cluster} get redisclusters -A -o wide")
        if retry_revision:
            commands.append(
                f"syncer retry --config agent.yaml --cluster {cluster} --revision {retry_revision[:12]}"
                ' --reason "..."'
            )
    if len(clusters) > MAX_COMMAND_CLUSTERS:
        commands.append("syncer status")
    return tuple(commands)


class Bounds:
    """When each bounded condition began: a cluster unreachable since its first such event with no
    answer from it after, a wave (of a revision) waiting for its window since its first such wait."""

    def __init__(self, settings: NotifySettings) -> None:
        self.settings = settings
        self.unreachable: dict[str, float] = {}
        self.window: dict[tuple[str, str], float] = {}

    def observe(self, event: PassEvent, now: float) -> None:
        """Forget a condition the event shows is over."""
        if event.cluster and event.step not in _NOT_AN_ANSWER:
            self.unreachable.pop(event.cluster, None)
        if event.wave and event.step in _WAVE_MOVES:
            self.window.pop((event.wave, event.revision), None)

    def lasted(self, bound: Bound, event: PassEvent, now: float) -> float | None:
        """Seconds the condition has lasted when it has lasted its bound, else None."""
        if bound is Bound.UNREACHABLE:
            since = self.unreachable.setdefault(event.cluster, now)
            limit = self.settings.unreachable_after
        else:
            if not _waits_for_window(event):
                return None
            since = self.window.setdefault((event.wave, event.revision), now)
            limit = self.settings.window_wait_after
        return now - since if now - since >= limit else None


def _waits_for_window(event: PassEvent) -> bool:
    return event.step is Step.GATE_WAIT and event.waiting is Waiting.WINDOW


def rolled_back_detail(rollout: RolloutStatus, event: PassEvent) -> str:
    """What a cluster's rollback tells, from the rollout's status: the wave that failed (or was
    aborted) on which revision and why, then where the cluster went back to."""
    wave = rollout.wave(event.wave)
    ended = wave.ended or (wave.phase if wave.phase in ENDED_BADLY else None)
    if not rollout.revision or ended is None:
        return event.detail
    cause = f": {wave.cause}" if wave.cause else ""
    back = f"{event.cluster or 'its clusters'} rolled back to {event.revision[:12]}"
    return f"wave {wave.name} {ended} at {rollout.revision[:12]}{cause}; {back} ({event.detail})"


class Classifier:
    """Turns pass events into notices (``RULES``), keeping the ``Bounds`` and the rollout's status
    (``syncer.domain.rollout_status``: a rollback's notice says which wave failed and why);
    ``contexts`` gives the kubeconfig context of each cluster for the commands."""

    def __init__(self, settings: NotifySettings, contexts: Mapping[str, str]) -> None:
        self.bounds = Bounds(settings)
        self.contexts = contexts
        self.rollout = initial(())

    def notice(self, event: PassEvent, now: float) -> Notice | None:
        self.bounds.observe(event, now)
        self.rollout = advance(self.rollout, event)
        rule = RULES[event.step]
        if rule is None:
            return None
        detail = event.detail
        if event.step is Step.ROLLED_BACK:
            detail = rolled_back_detail(self.rollout, event)
        if rule.bound is not None:
            lasted = self.bounds.lasted(rule.bound, event, now)
            if lasted is None:
                return None
            detail = f"{detail} (for {lasted:.0f}s)"
        reason = reason_of(event.cause, rule.reason) if event.cause is not None else rule.reason
        if event.analysis is not None:
            reason = ANALYSED[event.analysis]
        clusters = (event.cluster,) if event.cluster else event.clusters
        failed = rule.kind is NoticeClass.WAVE_FAILED and rule.severity is Severity.ERROR
        return Notice(
            kind=rule.kind,
            severity=rule.severity,
            revision=event.revision,
            cluster=", ".join(clusters),
            wave=event.wave,
            reason=reason,
            detail=detail,
            commands=commands_for(clusters, self.contexts, event.revision if failed else ""),
            at=now,
            clusters=clusters,
        )
