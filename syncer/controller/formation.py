"""When each step of forming a Redis cluster happened, as the controller itself saw it.

Owns: the typed steps of a formation (``FormationStep``), the moment one was done (``FormationMark``,
wall-clock seconds, so that another process on the same machine can set them against its own
clock), collecting a reconcile's marks (``FormationMarks``), which of them are worth telling
(``worth_telling``: only a pass that formed something, or the write that made the object Ready) and
turning marks into a breakdown from a starting moment (``breakdown``). The reconciler logs the
marks it tells as structured records (``formation_step``, ``at``); nothing reads their text back.

Must not: talk to Redis or Kubernetes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum


class FormationStep(StrEnum):
    """A step of forming a cluster, in the order a fresh cluster goes through them."""

    PODS_READY = "pods-ready"  # the pass found every pod Ready with an IP (the pass's start)
    SERVERS_ANSWER = "servers-answer"  # every server answered the pass's first look
    MET = "met"  # every node knows every other (after CLUSTER MEET, once gossip spread)
    SLOTS_ASSIGNED = "slots-assigned"  # every unserved slot given to its shard's master
    REPLICAS_TOLD = "replicas-told"  # every replica told to follow its master
    CLUSTER_OK = "cluster-ok"  # every node says cluster_state:ok
    HEALTHY = "healthy"  # the pass's verdict: healthy, every replica's link up
    READY_WRITTEN = "ready-written"  # the apiserver stored the status with Ready True


ACTING = frozenset({FormationStep.MET, FormationStep.SLOTS_ASSIGNED, FormationStep.REPLICAS_TOLD})
"""Steps told only by a pass that changed the cluster (it sent a command for them)."""


@dataclass(frozen=True)
class FormationMark:
    """``step`` was done at ``at`` (seconds since the epoch)."""

    step: FormationStep
    at: float


FormationListener = Callable[[FormationStep], None]
"""Told each step as it is done."""


def untold(step: FormationStep) -> None:
    """A listener nobody listens to."""


class FormationMarks:
    """The marks of one reconcile, in the order they were told; ``tell`` is its listener."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.marks: list[FormationMark] = []

    def tell(self, step: FormationStep) -> None:
        self.marks.append(FormationMark(step, self._clock()))

    def log(self, log: logging.LoggerAdapter[logging.Logger]) -> None:
        """Log the marks worth telling (``worth_telling``), each as a record of its own with the
        fields ``formation_step`` and ``at``."""
        for mark in worth_telling(self.marks):
            extra = {"formation_step": mark.step.value, "at": round(mark.at, 4)}
            log.info("formation: %s", mark.step.value, extra=extra)


def worth_telling(marks: Sequence[FormationMark]) -> list[FormationMark]:
    """The marks of a reconcile worth logging: all of them when its pass changed the cluster (met,
    assigned slots or told replicas), else only the write that turned the status Ready (told only
    then). A pass that only looked (every later reconcile) tells nothing. Each step is told once, at
    its first mark."""
    acted = any(m.step in ACTING for m in marks)
    chosen: dict[FormationStep, FormationMark] = {}
    for mark in marks:
        if acted or mark.step is FormationStep.READY_WRITTEN:
            chosen.setdefault(mark.step, mark)
    return list(chosen.values())


@dataclass(frozen=True)
class StepTiming:
    """One step of a breakdown: ``since_start`` seconds after the start, ``took`` after the step
    before it (or the start)."""

    step: FormationStep
    since_start: float
    took: float


def breakdown(start: float, marks: Iterable[FormationMark]) -> list[StepTiming]:
    """Each step's first mark at or after ``start``, in the order they happened, with its time since
    ``start`` and since the step before it. Steps without a mark are left out."""
    first: dict[FormationStep, float] = {}
    for mark in marks:
        if mark.at >= start and (mark.step not in first or mark.at < first[mark.step]):
            first[mark.step] = mark.at
    spans: list[StepTiming] = []
    before = start
    for step, at in sorted(first.items(), key=lambda item: item[1]):
        spans.append(StepTiming(step, at - start, at - before))
        before = at
    return spans
