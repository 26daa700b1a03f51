"""Which pass events become which notices: every step has its row, reasons come from typed error
values, and the bounded classes wait for their bound."""

from __future__ import annotations

from syncer.config.settings import NotifySettings
from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.notices import NoticeClass, Severity
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.errors import GuardRejected, Location, ManifestError, Problem, VerificationError
from syncer.notify.classify import ANALYSED, RULES, Classifier

CONTEXTS = {"eu-1": "kind-eu-1"}


def _classifier(**bounds: float) -> Classifier:
    return Classifier(NotifySettings(**bounds), CONTEXTS)


def test_every_step_has_exactly_one_row() -> None:
    assert set(RULES) == set(Step)


def test_every_failure_class_the_issue_names_is_raised_by_some_step() -> None:
    raised = {rule.kind for rule in RULES.values() if rule is not None}
    assert raised == set(NoticeClass)


def test_a_rejection_says_what_refused_it_from_the_error_value_not_its_text() -> None:
    classify = _classifier()
    causes = {
        "signature": VerificationError("x", verdict="unsigned"),
        "manifests": ManifestError([Problem("schema", "signature trouble", Location("fleet.yaml", 3, 1))]),
        "guard": GuardRejected("x"),
    }
    for reason, cause in causes.items():
        event = PassEvent(Step.REVISION_REJECTED, revision="abc", error=str(cause), cause=cause)
        notice = classify.notice(event, 10.0)
        assert notice is not None
        assert (notice.kind, notice.severity, notice.reason) == (
            NoticeClass.REVISION_REJECTED,
            Severity.ERROR,
            reason,
        )
        assert notice.commands == ("syncer status",)


def test_a_cluster_notice_carries_its_cluster_revision_and_commands() -> None:
    event = PassEvent(Step.GATE_ROLLBACK, "eu", "eu-1", "abc", reason="eu-1: Stalled")
    notice = _classifier().notice(event, 5.0)
    assert notice is not None
    assert (notice.kind, notice.cluster, notice.wave, notice.revision) == (
        NoticeClass.WAVE_FAILED,
        "eu-1",
        "eu",
        "abc",
    )
    assert (notice.reason, notice.detail, notice.at) == ("unhealthy", "eu-1: Stalled", 5.0)
    assert notice.commands == (
        "syncer status --cluster eu-1",
        "kubectl --context kind-eu-1 get redisclusters -A -o wide",
        'syncer retry --config agent.yaml --cluster eu-1 --revision abc --reason "..."',
    )


def test_a_failed_wave_names_its_failed_clusters_and_the_commands_for_each() -> None:
    revision = "0123456789abcdef0123456789abcdef01234567"
    event = PassEvent(
        Step.GATE_HALT,
        "eu",
        revision=revision,
        reason="eu-1: degraded; eu-2: degraded",
        clusters=("eu-1", "eu-2"),
    )
    notice = _classifier().notice(event, 5.0)
    assert notice is not None
    assert (notice.kind, notice.cluster, notice.clusters) == (
        NoticeClass.WAVE_FAILED,
        "eu-1, eu-2",
        ("eu-1", "eu-2"),
    )
    assert notice.summary == "wave-failed on eu-1, eu-2 (wave eu) at 0123456789ab: unhealthy"
    assert notice.commands == (
        "syncer status --cluster eu-1",
        "kubectl --context kind-eu-1 get redisclusters -A -o wide",
        'syncer retry --config agent.yaml --cluster eu-1 --revision 0123456789ab --reason "..."',
        "syncer status --cluster eu-2",
        "kubectl --context eu-2 get redisclusters -A -o wide",
        'syncer retry --config agent.yaml --cluster eu-2 --revision 0123456789ab --reason "..."',
    )


def test_a_window_wait_is_no_failure_to_retry() -> None:
    event = PassEvent(Step.GATE_WAIT, "eu", revision="abc", reason="closed", waiting=Waiting.WINDOW)
    notice = _classifier(window_wait_after=0).notice(event, 5.0)
    assert notice is not None
    assert (notice.cluster, notice.commands) == ("", ("syncer status",))


def test_steps_without_a_row_give_no_notice() -> None:
    assert _classifier().notice(PassEvent(Step.APPLYING, "w", "eu-1", "abc"), 0) is None


def test_an_unreachable_cluster_is_told_once_it_stayed_so_for_the_bound() -> None:
    classify = _classifier(unreachable_after=60)
    event = PassEvent(Step.CLUSTER_UNREACHABLE, cluster="us-1", error="connection refused")
    assert classify.notice(event, 100.0) is None
    assert classify.notice(event, 159.0) is None
    notice = classify.notice(event, 160.0)
    assert notice is not None
    assert notice.kind is NoticeClass.CLUSTER_UNREACHABLE
    assert notice.detail == "connection refused (for 60s)"
    # An answer from the cluster starts the clock again.
    classify.notice(PassEvent(Step.HEALTH_CHECKED, "w", "us-1", "abc"), 170.0)
    assert classify.notice(event, 171.0) is None


def test_a_wave_waiting_for_its_window_is_told_beyond_the_bound_and_not_for_other_waits() -> None:
    classify = _classifier(window_wait_after=600)
    window = PassEvent(Step.GATE_WAIT, "eu", revision="abc", reason="closed", waiting=Waiting.WINDOW)
    health = PassEvent(Step.GATE_WAIT, "eu", revision="abc", reason="not ready", waiting=Waiting.HEALTH)
    assert classify.notice(health, 0.0) is None
    assert classify.notice(health, 10_000.0) is None
    assert classify.notice(window, 0.0) is None
    # A window-closed step of a cluster of the wave does not start the clock again.
    classify.notice(PassEvent(Step.WINDOW_CLOSED, "eu", "eu-1", "abc", waiting=Waiting.WINDOW), 300.0)
    notice = classify.notice(window, 600.0)
    assert notice is not None
    assert (notice.kind, notice.reason, notice.severity) == (
        NoticeClass.WAVE_FAILED,
        "window-wait",
        Severity.WARNING,
    )
    # The wave moving on ends the wait.
    classify.notice(PassEvent(Step.APPLYING, "eu", "eu-1", "abc"), 700.0)
    assert classify.notice(window, 701.0) is None


def test_a_wave_failed_by_its_analysis_says_so_and_one_failed_by_health_says_unhealthy() -> None:
    """The gate's event carries the analysis verdict it followed: a healthy canary halted by its
    metrics is not reported as unhealthy."""
    classify = _classifier()
    cases = {
        AnalysisVerdict.FAILED: "analysis-failed",
        AnalysisVerdict.INCONCLUSIVE: "analysis-inconclusive",
        None: "unhealthy",
    }
    for step in (Step.GATE_HALT, Step.GATE_ROLLBACK):
        for verdict, reason in cases.items():
            event = PassEvent(step, "canary", revision="abc", reason="why", analysis=verdict)
            notice = classify.notice(event, 1.0)
            assert notice is not None
            assert (notice.kind, notice.severity, notice.reason) == (
                NoticeClass.WAVE_FAILED,
                Severity.ERROR,
                reason,
            )


def test_every_analysis_verdict_has_a_reason_word() -> None:
    assert set(ANALYSED) == set(AnalysisVerdict)


def test_a_rollback_says_which_wave_failed_on_which_revision_and_why() -> None:
    classify = _classifier()
    bad, good = "b" * 40, "a" * 40
    for event in (
        PassEvent(Step.ROLLOUT_STARTED, "canary", revision=bad),
        PassEvent(Step.APPLYING, "canary", "canary-1", bad),
        PassEvent(Step.GATE_ROLLBACK, "canary", revision=bad, reason="analysis: errors 0.4 > 0.1"),
        PassEvent(Step.ROLLING_BACK, "canary", revision=good, reason="health only"),
        PassEvent(Step.GATE_PROCEED, "canary", revision=good, reason="all healthy"),
    ):
        classify.notice(event, 10.0)
    back = PassEvent(
        Step.ROLLED_BACK, "canary", "canary-1", good, reason=f"back from {bad[:12]}: all healthy"
    )
    notice = classify.notice(back, 11.0)
    assert notice is not None
    assert (notice.kind, notice.cluster, notice.wave, notice.revision) == (
        NoticeClass.ROLLBACK_DONE,
        "canary-1",
        "canary",
        good,
    )
    assert notice.detail == (
        f"wave canary failed at {bad[:12]}: analysis: errors 0.4 > 0.1; canary-1 rolled back to {good[:12]} "
        f"(back from {bad[:12]}: all healthy)"
    )
    # Without the wave's failure told first (another replica's), the rollback's own text.
    alone = _classifier().notice(back, 12.0)
    assert alone is not None
    assert alone.detail == back.detail
