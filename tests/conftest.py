"""Hooks and fixtures for every test: the test run's process mark (``tests.support.run_mark``)."""

from tests.support.run_mark import pytest_runtest_protocol, run_mark_kept

__all__ = ["pytest_runtest_protocol", "run_mark_kept"]
