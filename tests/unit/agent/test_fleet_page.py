"""The agent's fleet page picture: the revision gate's signer and subject, what a pass ends with, and
readers waiting for a newer picture."""

from __future__ import annotations

import threading
from pathlib import Path

from syncer.agent.fleet_page import FleetPage, revision_view
from syncer.config.trust import VerifyMode
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.engine.fleet_pass import PassResult
from syncer.engine.revision import Advance, PollOutcome, PreparedRevision
from syncer.engine.rollout_model import RolloutReport
from syncer.rollout.moves import RolloutOutcome
from syncer.source.snapshots import Snapshot
from syncer.status.fleet_view import RevisionView
from syncer.verify.results import CommitVerdict, Verdict, VerificationResult

SHA = "d" * 40


def prepared(sha: str, signer: str, subject: str) -> PreparedRevision:
    commit = CommitVerdict(sha, subject, Verdict.TRUSTED, "signed", signer=signer)
    return PreparedRevision(
        sha,
        DesiredFleet(sha, {}),
        VerificationResult(sha, VerifyMode.HEAD, "", (commit,)),
        Snapshot(sha, Path("tree"), Path("git"), "main"),
    )


def test_the_revision_rolling_out_is_named_by_its_verified_commit() -> None:
    gate = prepared(SHA, "ops", "<b>bump</b>")
    page = FleetPage(["canary"], ["c1"], lambda: gate)
    page.tell(PassEvent(Step.APPLYING, "canary", "c1", SHA))
    assert page.view.rolling == RevisionView(SHA, "ops", "<b>bump</b>")
    assert revision_view(gate, "e" * 40) == RevisionView("e" * 40)
    assert revision_view(None, SHA) == RevisionView(SHA)


def test_a_synced_pass_puts_its_revision_in_force_and_ends_the_rollout() -> None:
    gate = prepared(SHA, "ops", "bump")
    page = FleetPage(["canary"], ["c1"], lambda: gate)
    page.tell(PassEvent(Step.APPLYING, "canary", "c1", SHA))
    report = RolloutReport(SHA, RolloutOutcome.APPLIED, ())
    state = ClusterSyncState("c1", SHA, SyncPhase.HEALTHY, "canary", health="healthy")
    page.after_pass(PassResult(Advance(PollOutcome.ACCEPTED, gate), report, states={"c1": state}))
    view = page.view
    assert (view.in_force, view.rolling) == (RevisionView(SHA, "ops", "bump"), None)
    assert view.clusters["c1"].phase == "healthy"


def test_readers_wake_on_a_change_and_when_the_page_closes() -> None:
    page = FleetPage(["canary"], ["c1"], lambda: None)
    version = page.view.version
    assert page.wait_newer(version, 0.01) is None
    threading.Timer(0.05, page.tell, (PassEvent(Step.GATE_PROCEED, "canary"),)).start()
    newer = page.wait_newer(version, 5)
    assert newer is not None
    assert newer.waves[0].state == "passed"
    threading.Timer(0.05, page.close).start()
    assert page.wait_newer(newer.version, 5) is None
    assert page.closed
