"""The words of the rollout machine (``syncer.rollout.machine``): the facts the engine observed and
the effects it must run next, and how a rollout of one revision ended (``RolloutOutcome``). [pure]

Each effect but ``Tell``, ``Report`` and ``End`` asks the engine one fact back: ``Look`` ->
``Looked``, ``LookAtGate`` -> ``AtGate``, ``Apply`` -> ``Applied``, ``CheckGate`` -> ``GateLooked``,
``Analyse`` -> ``AnalysisLooked``, ``Sleep`` -> ``Slept``, ``Observe`` -> ``WaveObserved``,
``RecordPassed`` -> ``PassRecorded``, ``RollBack`` and ``AbortBack`` -> ``WentBack``. The gate's
words (``CheckGate`` ... ``Slept``) are those of ``syncer.rollout.gate_wait`` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from syncer.analysis.wave import WaveAnalysisVerdict
from syncer.domain.progress import PassEvent
from syncer.rollout.gate import ClusterProgress, Decision, GateVerdict
from syncer.rollout.held import Held
from syncer.rollout.waves import Wave


class RolloutOutcome(StrEnum):
    """How a rollout of one revision ended."""

    APPLIED = "applied"
    UNCHANGED = "unchanged"
    HALTED = "halted"
    ROLLED_BACK = "rolled-back"
    INTERRUPTED = "interrupted"
    WAITING = "waiting"  # a wave waits for a cluster that cannot be reached or written to
    FENCED_OUT = "fenced-out"  # this replica lost the Lease: nothing more was written
    SUPERSEDED = "superseded"  # a newer verified revision took over at a wave boundary


# -- effects: what the engine must do next --------------------------------------------------------


@dataclass(frozen=True)
class Look:
    """Look at ``wave`` before it starts: whether the agent is asked to stop, whether a newer
    revision takes over (asked only when ``ask_newer``: this pass wrote something), whether the wave
    passed before, a person's abort of the revision, and what refuses the revision there."""

    wave: Wave
    ask_newer: bool


@dataclass(frozen=True)
class LookAtGate:
    """Look at ``wave``'s gates before it applies: its manual gate (recording what it waits for), what
    holds its clusters now, and which of them cannot be reached."""

    wave: Wave


@dataclass(frozen=True)
class Apply:
    """Apply the revision to the clusters of ``wave`` (each checked again for a hold as it is)."""

    wave: Wave


@dataclass(frozen=True)
class CheckGate:
    """Look once at ``wave``'s health gate now: the time, each cluster's progress, and, ``whole``
    (the wave in hand rolling out, not the part of it that can be reached), a newer revision and a
    person's abort; ``again``: the gate looked before (a person's acts are read afresh). A sharded
    replica first applies the clusters it gained meanwhile."""

    wave: Wave
    whole: bool = True
    again: bool = False


@dataclass(frozen=True)
class Analyse:
    """Measure ``wave``'s analysis (what is due; the counts recorded), or, ``background``, the
    rollout's background analysis over every cluster on the revision."""

    wave: Wave
    background: bool = False


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` before the gate looks again, unless the agent is asked to stop."""

    seconds: float


@dataclass(frozen=True)
class Report:
    """The gate of the wave in hand decided: its report says ``verdict``."""

    wave: Wave
    verdict: GateVerdict


@dataclass(frozen=True)
class Observe:
    """Watch a wave that passed before (drift repaired, health recorded); ``before_wait``: only the
    part of it that answers, before the wave waits for the rest."""

    wave: Wave
    before_wait: bool = False


@dataclass(frozen=True)
class RecordPassed:
    """Record that ``clusters`` of ``wave`` passed on ``revision``: healthy, their last good revision.
    The one place a last good revision of a rollout is written."""

    wave: str
    clusters: tuple[str, ...]
    revision: str


@dataclass(frozen=True)
class RollBack:
    """Record the failure of ``wave`` (``verdict``) and, on a rollback decision, put its clusters back
    on the revision each last ran healthy; ``reported``: the verdict's wave report is already made."""

    wave: Wave
    verdict: GateVerdict
    reported: bool = True


@dataclass(frozen=True)
class AbortBack:
    """End ``wave`` for a person's abort of the revision (``verdict``): its clusters on it go back."""

    wave: Wave
    verdict: GateVerdict


@dataclass(frozen=True)
class Tell:
    """Tell the pass's listener ``event``."""

    event: PassEvent


@dataclass(frozen=True)
class End:
    """The rollout ends: ``outcome`` with ``message``; with a ``wave``, its report closes the rollout
    (``decision`` and the message as its reason)."""

    outcome: RolloutOutcome
    message: str = ""
    wave: Wave | None = None
    decision: Decision | None = None


GateAsking = CheckGate | Analyse | Sleep
Asking = Look | LookAtGate | Apply | GateAsking | Observe | RecordPassed | RollBack | AbortBack
Effect = Asking | Tell | Report | End


# -- facts: what the engine observed -------------------------------------------------------------


@dataclass(frozen=True)
class Looked:
    """Before a wave: the agent was asked to ``stop``; a ``newer`` verified revision takes over; the
    wave ``passed`` on the revision before; a person's ``abort`` of it; why the revision is
    ``refused`` there ("" when not). Fields after the first that ends the look may be unset."""

    stop: bool = False
    newer: bool = False
    passed: bool = False
    abort: GateVerdict | None = None
    refused: str = ""


@dataclass(frozen=True)
class AtGate:
    """At a wave's gates: why it ``awaits`` promotion ("" when it may start), what ``held`` it (a
    suspension, a pin, a closed window), the clusters that cannot be reached (``unreachable``, each
    with why), whether the ones that can ``reachable_passed`` before, and whether no cluster
    records the revision yet (``fresh``: the rollout starts with this wave)."""

    awaits: str = ""
    held: Held | None = None
    unreachable: tuple[tuple[str, str], ...] = ()
    reachable_passed: bool = False
    fresh: bool = False


@dataclass(frozen=True)
class Applied:
    """A wave applied: whether anything was ``wrote``, and its clusters that cannot be used now (each
    with why: unreachable, or held while it applied), and whether the others ``reachable_passed``."""

    wrote: bool
    unreachable: tuple[tuple[str, str], ...] = ()
    reachable_passed: bool = False


@dataclass(frozen=True)
class GateLooked:
    """One look at a wave's gate at ``now``: each cluster's ``progress``; whether the agent was asked
    to ``stop``; a ``newer`` verified revision takes over (a sharded replica, rolling out); a person's
    ``abort``; the clusters of the wave other replicas own that are not on the revision yet or left
    out meanwhile (``elsewhere``, each line with why) and what ``held`` them now (a person, a window);
    whether every cluster was already recorded healthy on the revision (``still``: nothing to judge
    again); and the engine's settings: the longest sleep between looks (``poll``) and whether a
    failed wave may ``rollback``. Fields after the first that ends the look may be unset."""

    now: float
    poll: float
    progress: tuple[ClusterProgress, ...] = ()
    stop: bool = False
    newer: bool = False
    abort: GateVerdict | None = None
    elsewhere: tuple[str, ...] = ()
    held: Held | None = None
    still: bool = False
    rollback: bool = False


@dataclass(frozen=True)
class AnalysisLooked:
    """What an analysis found when it looked (``found``; None: the rollout has no background analysis
    or no cluster is on the revision yet), and the clusters it looked at (``on``)."""

    found: WaveAnalysisVerdict | None
    on: tuple[str, ...] = ()


@dataclass(frozen=True)
class Slept:
    """The gate's sleep ended; ``stopped``: the agent was asked to stop."""

    stopped: bool


@dataclass(frozen=True)
class WaveObserved:
    """A passed wave watched: whether drift was repaired (``wrote``)."""

    wrote: bool


@dataclass(frozen=True)
class PassRecorded:
    """The clusters of a passed wave record it."""


@dataclass(frozen=True)
class WentBack:
    """How the failed or aborted wave's end came out: the rollout's ``outcome`` and ``message``."""

    outcome: RolloutOutcome
    message: str


@dataclass(frozen=True)
class LeaseLost:
    """This replica lost the Lease while it ran the effect asked (a write was fenced out): it may
    write nothing more; the replica that holds the Lease carries on from the clusters' records.
    It answers any effect that asks a fact."""

    message: str


GateFact = GateLooked | AnalysisLooked | Slept
Fact = Looked | AtGate | Applied | GateFact | WaveObserved | PassRecorded | WentBack | LeaseLost
