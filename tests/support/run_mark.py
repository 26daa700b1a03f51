"""A pytest plugin that keeps the test run's mark on every process the tests start.

``scripts/test`` sets ``SYNCER_TEST_RUN`` for the pytest process; every process a test starts inherits
it, and afterwards ``devfleet.leftovers`` lists the marked processes still alive. Two things keep that
check sighted:

- each test runs with ``SYNCER_TEST_ID`` set to its node id (the fixtures it sets up included), so a
  leftover names the test that started it;
- a test that leaves the mark changed or removed (instead of using ``monkeypatch.setenv``) errors, and
  the mark is put back for the tests after it: whatever they start would otherwise escape the check.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator

import pytest

RUN_MARK = "SYNCER_TEST_RUN"
TEST_ID = "SYNCER_TEST_ID"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    before = os.environ.get(TEST_ID)
    os.environ[TEST_ID] = item.nodeid
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TEST_ID, None)
        else:
            os.environ[TEST_ID] = before


@pytest.fixture(autouse=True)
def run_mark_kept(request: pytest.FixtureRequest) -> Iterator[None]:
    """Autouse, so set up before and torn down after the test's own fixtures (``monkeypatch``'s undo
    included): the mark must be back as it was when the test is done."""
    mark = os.environ.get(RUN_MARK)
    yield
    after = os.environ.get(RUN_MARK)
    if after == mark:
        return
    if mark is None:
        os.environ.pop(RUN_MARK, None)
    else:
        os.environ[RUN_MARK] = mark
    pytest.fail(
        f"{request.node.nodeid} changed {RUN_MARK} ({mark!r} -> {after!r}) and did not restore it: use "
        "monkeypatch.setenv, or every process started after it escapes the leftover check",
        pytrace=False,
    )
