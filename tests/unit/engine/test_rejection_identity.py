"""A rejection is told once per rejection, not per wording: the pass compares the revision, the stage
and the kind of error, so the same refusal worded differently on each poll (a temporary path or a
time in git's message) is told once, and two different refusals worded alike are each told. In
memory: only the pass's own decision is tested here (the gate over real git is tested in
``tests/integration/engine/test_rejection_identity.py``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from syncer.domain.progress import PassEvent, Step
from syncer.engine.revision import Advance, PollOutcome, Rejection, Stage
from syncer.errors import GuardRejected, VerificationError
from tests.support.memory_kube import MemoryKube
from tests.support.memory_revisions import MemoryRevisions
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import CLUSTERS, options


class Rewording(MemoryRevisions):
    """A gate that builds each poll's rejection anew, as git words it that time."""

    def __init__(self, rejections: Iterator[Rejection]) -> None:
        super().__init__()
        self._rejections = rejections

    def advance(self) -> Advance:
        return Advance(PollOutcome.REJECTED, None, next(self._rejections))


def told(rejections: list[Rejection]) -> list[tuple[str, str, str]]:
    """The rejections a pass per poll tells, as (revision, kind of error, its text)."""
    events: list[PassEvent] = []
    clusters = {name: MemoryKube(name) for name in CLUSTERS}
    fleet_pass = unfenced_pass(Rewording(iter(rejections)), clusters.__getitem__, options(), events.append)
    for _ in rejections:
        fleet_pass.run_pass(threading.Event())
    return [
        (e.revision, type(e.cause).__name__, str(e.cause)) for e in events if e.step is Step.REVISION_REJECTED
    ]


def unsigned(text: str) -> Rejection:
    return Rejection("rev-2", Stage.VERIFY, VerificationError(text, verdict="unsigned"))


def test_the_same_rejection_worded_differently_each_poll_is_told_once() -> None:
    worded = [unsigned(f"commit rev-2 is not signed (checked in /tmp/syncer-verify-{n})") for n in range(3)]
    assert told(worded) == [
        ("rev-2", "VerificationError", "commit rev-2 is not signed (checked in /tmp/syncer-verify-0)")
    ]


def test_different_rejections_worded_alike_are_each_told() -> None:
    text = "revision rev-2 is refused"
    alike = [
        unsigned(text),
        unsigned(text),
        Rejection("rev-2", Stage.VERIFY, VerificationError(text, verdict="unknown-key")),
        Rejection("rev-2", Stage.GUARDS, GuardRejected(text)),
        Rejection("rev-3", Stage.GUARDS, GuardRejected(text)),
    ]
    assert told(alike) == [
        ("rev-2", "VerificationError", text),  # unsigned, told once
        ("rev-2", "VerificationError", text),  # an unknown key
        ("rev-2", "GuardRejected", text),
        ("rev-3", "GuardRejected", text),
    ]
