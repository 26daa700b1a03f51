"""A git outage is an error of the source, logged as one ("git fetch failed: ..."), never as a
revision "(unknown)" rejected by source; a tip that is refused is still a rejection of that revision."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest
from prometheus_client import CollectorRegistry

from syncer.config import TrustPolicy
from syncer.engine.fleet_pass import rejection_event
from syncer.engine.revision import Rejection, RevisionGate, Stage
from syncer.errors import CacheUnusable, HistoryRewritten, SourceError
from syncer.status.metrics import SyncerMetrics
from syncer.status.report import EventReporter

OUTAGE = "ls-remote (https://git.example/fleet.git) failed: fatal: unable to access: Could not resolve host"


class Unreachable:
    """A git source whose remote does not answer."""

    unknown: tuple[str, ...] = ()

    def poll(self, recorded: Mapping[str, str]) -> object:
        raise SourceError(OUTAGE)


def outage() -> Rejection:
    gate = RevisionGate(Unreachable(), TrustPolicy())  # type: ignore[arg-type]
    rejection = gate.advance().rejection
    assert rejection is not None
    return rejection


def test_a_git_outage_is_a_failed_fetch_not_a_rejected_revision() -> None:
    rejection = outage()
    assert rejection.failed_source
    assert rejection.message == f"git fetch failed: {OUTAGE}"
    assert "rejected" not in rejection.message
    assert "(unknown)" not in rejection.message


def test_a_refused_tip_and_an_unusable_cache_keep_their_own_words() -> None:
    tip = "a" * 40
    rewritten = Rejection(
        tip, Stage.SOURCE, HistoryRewritten("history rewritten", revision=tip, base="b" * 40)
    )
    assert not rewritten.failed_source
    assert rewritten.message == f"revision {tip[:12]} rejected by source: history rewritten"
    cache = Rejection(
        "", Stage.SOURCE, CacheUnusable("/var/cache/syncer", path="/var/cache/syncer", reason="Read-only")
    )
    assert cache.failed_source
    assert cache.message == "the source cache /var/cache/syncer cannot be used: /var/cache/syncer: Read-only"


def test_the_agent_logs_a_git_outage_as_an_error_of_the_source(caplog: pytest.LogCaptureFixture) -> None:
    report = EventReporter(SyncerMetrics(CollectorRegistry()), {}, "syncer-system")
    with caplog.at_level(logging.INFO, logger="syncer.agent"):
        report(rejection_event(outage()))
    (record,) = [r for r in caplog.records if r.name == "syncer.agent"]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "source-failed"
    assert record.__dict__["detail"] == f"git fetch failed: {OUTAGE}"
