"""The revision gate over real git when its cache cannot be written after the poll: recording the
revision synced (``mark_synced``) fails as a source rejection of the pass, never as an exception,
and while the same part of the cache fails for the same reason it is the one rejection the poll
gave (the pass tells it once, counts it every poll). Real git repositories, real signatures."""

from __future__ import annotations

import pytest

from syncer.engine.revision import PollOutcome, Stage
from syncer.errors import CacheUnusable, SourceError
from syncer.source.cache import LOCK_FILE
from tests.integration.engine.test_revision_gate import Fixture, repo

pytestmark = pytest.mark.integration

__all__ = ["repo"]  # the fixture used here


def test_a_cache_that_cannot_be_locked_is_one_rejection_for_the_poll_and_the_synced_revision(
    repo: Fixture,
) -> None:
    first = repo.gate.advance()
    assert first.outcome is PollOutcome.ACCEPTED
    assert first.current is not None
    assert repo.gate.mark_synced(first.current.revision) is None

    lock = repo.source.options.cache_dir / LOCK_FILE
    lock.unlink()
    lock.mkdir()  # a folder where the cache's lock file goes: the cache cannot be used
    polled = repo.gate.advance()
    assert polled.current == first.current  # the revision in force stays
    assert polled.rejection is not None
    assert polled.rejection.stage is Stage.SOURCE
    assert isinstance(polled.rejection.error, CacheUnusable)
    for _ in range(2):
        assert repo.gate.mark_synced(first.current.revision) is polled.rejection
        assert repo.gate.advance().rejection is polled.rejection

    lock.rmdir()
    assert repo.gate.advance().rejection is None
    assert repo.gate.mark_synced(first.current.revision) is None


def test_a_ref_git_cannot_write_is_a_source_rejection_not_an_exception(repo: Fixture) -> None:
    first = repo.gate.advance()
    assert first.current is not None
    blocker = repo.source.git_dir / "refs" / "syncer" / "synced.lock"
    blocker.mkdir(parents=True)  # not a stale lock file: git cannot take the ref's lock
    fault = repo.gate.mark_synced(first.current.revision)
    assert fault is not None
    assert fault.stage is Stage.SOURCE
    assert isinstance(fault.error, SourceError)
    assert "refs/syncer/synced" in str(fault.error)
    blocker.rmdir()
    assert repo.gate.mark_synced(first.current.revision) is None
