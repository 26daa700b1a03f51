"""The revision gate over real git keeps one rejection per refusal, not per wording: a force-push
back behind what the clusters record is refused with a text naming the clusters that record the
base, and that text changes when another cluster records it too; it is still the same rejection
(the pass tells it once). Real git repositories, real ssh-keygen signatures."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.engine.revision import PollOutcome
from syncer.errors import HistoryRewritten
from tests.integration.engine.test_revision_gate import Fixture, force_push, fresh_gate, repo

pytestmark = pytest.mark.integration

__all__ = ["repo"]  # the fixture used here


def test_a_refusal_whose_text_changes_between_polls_stays_the_same_rejection(
    repo: Fixture, tmp_path: Path
) -> None:
    a = repo.work.git("rev-parse", "HEAD")
    b = repo.push("newer signed revision", {"notes/b.txt": "b\n"})
    force_push(repo, a)
    recorded = {b: "the revision canary records as applied"}
    gate = fresh_gate(repo, tmp_path / "fresh", recorded)
    gate.recorded = lambda _: dict(recorded)
    first = gate.advance()
    assert first.outcome is PollOutcome.REJECTED
    assert first.rejection is not None
    assert isinstance(first.rejection.error, HistoryRewritten)

    recorded[b] = "the revision canary, eu-1 record(s) as applied"  # eu-1 caught up meanwhile
    second = gate.advance()
    assert second.rejection is not None
    assert second.rejection is first.rejection  # the gate keeps the one rejection ...
    # ... though git's refusal is worded anew now, as a replica that had not seen it before words it.
    anew = fresh_gate(repo, tmp_path / "other", recorded).advance().rejection
    assert anew is not None
    assert "canary, eu-1" in str(anew.error)
    assert str(anew.error) != str(first.rejection.error)
    assert anew.same_as(first.rejection)
