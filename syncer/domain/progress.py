"""The typed progress of a pass: which step happened, where, and how each step is reported.

The engine emits one ``PassEvent`` per step; the CLI, the logs, the Kubernetes Events and the metrics
all read the same events. What a step means to each of them is said once, in ``TREATMENTS``: adding a
step is one member of ``Step`` and one row there (a unit test checks that every step has its row).
Nothing is ever learnt by reading an event's text: the step, the ``wait`` kind and the typed fields
carry the meaning, the text is for people.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from syncer.domain.analysis import AnalysisVerdict, Measurement
from syncer.domain.changeset import ChangeSet
from syncer.domain.health import Health, ObjectHealth
from syncer.errors import SyncerError


class Step(StrEnum):
    """What happened. The values are what logs and the CLI print."""

    SOURCE_FAILED = "source-failed"
    REVISION_REJECTED = "revision-rejected"
    BASE_IGNORED = "base-ignored"
    RECORD_UNKNOWN = "record-unknown"  # a cluster records a commit the repository does not hold
    LAST_GOOD_UNAVAILABLE = "last-good-unavailable"
    STATE_REBUILT = "state-rebuilt"
    STATE_UNSAVED = "state-unsaved"
    ALREADY_APPLIED = "already-applied"
    APPLYING = "applying"
    APPLIED = "applied"
    APPLY_FAILED = "apply-failed"
    GATE_WAIT = "gate-wait"
    GATE_PROCEED = "gate-proceed"
    GATE_STILL_HEALTHY = "gate-still-healthy"
    GATE_HALT = "gate-halt"
    GATE_ROLLBACK = "gate-rollback"
    ROLLING_BACK = "rolling-back"
    NOT_OWNER = "not-owner"
    DRIFT_REPAIRED = "drift-repaired"
    DRIFT_REPAIR_FAILED = "drift-repair-failed"
    DRIFT_REPAIR_WAITING = "drift-repair-waiting"  # drift found outside the cluster's window
    CLUSTER_SUSPENDED = "cluster-suspended"  # a person's suspension holds a change back
    AWAITING_PROMOTION = "awaiting-promotion"  # a wave with a manual gate waits for ``syncer promote``
    PROMOTED = "promoted"  # a person promoted the waiting revision: the wave starts
    ROLLOUT_ABORTED = "rollout-aborted"  # a person aborted the revision: its wave in flight ends
    CLUSTER_PINNED = "cluster-pinned"  # a person's pin (syncer rollback) keeps the cluster on a revision
    PIN_UNAVAILABLE = "pin-unavailable"  # the pinned revision cannot be had from git, or fails a check
    IN_FORCE_WAIT = "in-force-wait"  # sharded replicas do not agree yet on the revision in force
    HEALTH_CHECKED = "health-checked"
    CLUSTER_DEGRADED = "cluster-degraded"
    CLUSTER_RECOVERED = "cluster-recovered"
    CLUSTER_UNREACHABLE = "cluster-unreachable"
    ROLLBACK_UNAVAILABLE = "rollback-unavailable"
    NOT_BLAMED = "not-blamed"
    FENCED_OUT = "fenced-out"
    SUPERSEDED = "superseded"
    WINDOW_OPEN = "window-open"
    WINDOW_CLOSED = "window-closed"
    WINDOW_OVERRIDDEN = "window-overridden"
    ROLLOUT_STARTED = "rollout-started"  # a revision's first wave begins applying to the fleet
    ROLLOUT_FINISHED = "rollout-finished"  # the last wave of a revision passed its gate this pass
    ROLLED_BACK = "rolled-back"  # the failed clusters of a wave are back on the revision named
    SUSPENSION_STARTED = "suspension-started"  # a cluster records a suspension it did not last pass
    SUSPENSION_ENDED = "suspension-ended"  # a cluster no longer records the suspension it did
    ANALYSIS_MEASURED = "analysis-measured"  # one measurement of a wave's canary analysis


class Waiting(StrEnum):
    """What a waiting gate waits for: clusters to become healthy, a healthy wave to bake, or the
    maintenance window of its clusters to open."""

    HEALTH = "health"
    BAKE = "bake"
    WINDOW = "window"
    SUSPENDED = "suspended"  # a person suspended a cluster of the wave (``syncer resume`` ends it)
    PROMOTION = "promotion"  # a manual gate: the wave starts once a person runs ``syncer promote``
    ANALYSIS = "analysis"  # a healthy, baked wave is being judged by its metrics


@dataclass(frozen=True)
class PassEvent:
    """One step of a pass. ``wave``/``cluster`` are empty when the step is about the whole wave or
    fleet; ``reason`` says why (a gate's verdict, a rebuilt state's problem); ``error`` is the error
    of a failed step and ``cause`` the error value itself when there is one; ``objects`` counts the
    objects a step wrote; ``waiting`` tells a health wait from a bake; ``measurement`` is what an
    analysis measured; ``analysis`` is the verdict of a wave's analysis a gate's decision follows
    (None: the wave's health decided); ``changes`` is the change set of an apply or a drift repair
    (each object's action, outcome and masked field changes); ``objects_health`` each object's
    verdict where a step judged the cluster's health; ``clusters`` the clusters a step about a whole
    wave names (the failed ones of a gate's halt or rollback)."""

    step: Step
    wave: str = ""
    cluster: str = ""
    revision: str = ""
    reason: str = ""
    error: str = ""
    cause: SyncerError | None = None
    objects: int = 0
    waiting: Waiting | None = None
    health: Health | None = None
    measurement: Measurement | None = None
    analysis: AnalysisVerdict | None = None
    changes: ChangeSet | None = None
    objects_health: tuple[ObjectHealth, ...] = ()
    clusters: tuple[str, ...] = ()

    @property
    def treatment(self) -> Treatment:
        return TREATMENTS[self.step]

    @property
    def detail(self) -> str:
        """The event's text for people: the error, else the reason, else the revision where the step
        names one."""
        if self.error or self.reason:
            return self.error or self.reason
        return self.revision if self.treatment.names_revision else ""


@dataclass(frozen=True)
class Treatment:
    """How one step is reported: the Kubernetes Event reason (empty: no Event) and whether it is a
    Warning (also the log level), the mark the CLI
    prints before it (empty: the CLI leaves it to the pass's summary), and whether its text is the
    revision when it has no reason or error; a ``quiet`` step is logged at debug level only, an
    ``error`` (syncer's own source failing, no verdict on a revision) at error level."""

    event_reason: str = ""
    warning: bool = False
    error: bool = False
    mark: str = "-"
    names_revision: bool = False
    quiet: bool = False


TREATMENTS: Mapping[Step, Treatment] = MappingProxyType(
    {
        Step.SOURCE_FAILED: Treatment(warning=True, error=True, mark=""),
        Step.REVISION_REJECTED: Treatment("RevisionRejected", warning=True, mark=""),
        Step.BASE_IGNORED: Treatment("UnverifiedBaseIgnored", warning=True, mark="!"),
        Step.RECORD_UNKNOWN: Treatment("UnknownRevisionRecorded", warning=True, mark="!"),
        Step.LAST_GOOD_UNAVAILABLE: Treatment(warning=True, names_revision=True),
        Step.STATE_REBUILT: Treatment("StateRebuilt", warning=True),
        Step.STATE_UNSAVED: Treatment(warning=True),
        Step.ALREADY_APPLIED: Treatment(mark="=", names_revision=True),
        Step.APPLYING: Treatment(mark="…", names_revision=True),
        Step.APPLIED: Treatment("Applied", mark="✓"),
        Step.APPLY_FAILED: Treatment("ApplyFailed", warning=True, mark="✗"),
        Step.GATE_WAIT: Treatment(mark="·"),
        Step.GATE_PROCEED: Treatment("WaveHealthy", mark="✓"),
        # A wave every cluster of which was already recorded healthy on the revision: no Event, so
        # that a pass with nothing to do writes nothing.
        Step.GATE_STILL_HEALTHY: Treatment(mark="="),
        Step.GATE_HALT: Treatment("RolloutHalted", warning=True, mark="✗"),
        Step.GATE_ROLLBACK: Treatment("RolloutFailed", warning=True, mark="✗"),
        Step.ROLLING_BACK: Treatment("RollingBack", warning=True, mark="↺", names_revision=True),
        Step.NOT_OWNER: Treatment(warning=True),
        Step.DRIFT_REPAIRED: Treatment("DriftRepaired", mark="✓"),
        Step.DRIFT_REPAIR_FAILED: Treatment(mark="✗"),
        Step.DRIFT_REPAIR_WAITING: Treatment("DriftRepairWaiting", mark="⏸"),
        Step.CLUSTER_SUSPENDED: Treatment("ClusterSuspended", mark="⏸"),
        Step.AWAITING_PROMOTION: Treatment("AwaitingPromotion", mark="⏸"),
        Step.PROMOTED: Treatment("WavePromoted", mark="✓"),
        Step.ROLLOUT_ABORTED: Treatment("RolloutAborted", warning=True, mark="✗"),
        Step.CLUSTER_PINNED: Treatment("ClusterPinned", mark="⏸"),
        Step.PIN_UNAVAILABLE: Treatment("PinUnavailable", warning=True, mark="✗", names_revision=True),
        Step.IN_FORCE_WAIT: Treatment(warning=True, mark="⏸", names_revision=True),
        Step.HEALTH_CHECKED: Treatment(mark="", quiet=True),
        Step.CLUSTER_DEGRADED: Treatment("ClusterDegraded", warning=True, mark="!"),
        Step.CLUSTER_RECOVERED: Treatment("ClusterRecovered", mark="✓"),
        Step.CLUSTER_UNREACHABLE: Treatment(warning=True, mark="✗"),
        Step.ROLLBACK_UNAVAILABLE: Treatment("RollbackUnavailable", warning=True, mark="✗"),
        # A failed cluster that was not healthy before the revision came: the revision is not blamed.
        Step.NOT_BLAMED: Treatment("RevisionNotBlamed", warning=True, mark="!"),
        Step.FENCED_OUT: Treatment(warning=True, mark="✗"),
        Step.SUPERSEDED: Treatment("RevisionSuperseded", mark="↻", names_revision=True),
        Step.WINDOW_OPEN: Treatment(mark="", quiet=True),
        Step.WINDOW_CLOSED: Treatment("OutsideMaintenanceWindow", mark="⏸"),
        Step.WINDOW_OVERRIDDEN: Treatment("MaintenanceWindowOverridden", warning=True, mark="!"),
        Step.ROLLOUT_STARTED: Treatment(mark="", names_revision=True),
        Step.ROLLOUT_FINISHED: Treatment(mark="", names_revision=True),
        Step.ROLLED_BACK: Treatment(warning=True, mark="↺", names_revision=True),
        Step.SUSPENSION_STARTED: Treatment(warning=True, mark="⏸"),
        Step.SUSPENSION_ENDED: Treatment(mark="▶"),
        Step.ANALYSIS_MEASURED: Treatment("AnalysisMeasured", mark="~"),
    }
)


Listener = Callable[[PassEvent], None]
"""Whoever is told of a pass's events, as they happen."""


def to_all(*listeners: Listener | None) -> Listener:
    """One listener that tells each of ``listeners`` (None ones left out) in order."""
    chosen = [listener for listener in listeners if listener is not None]

    def tell(event: PassEvent) -> None:
        for listener in chosen:
            listener(event)

    return tell
