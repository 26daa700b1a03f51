"""The leftover check of scripts/test counts only processes carrying the test run's mark."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from devfleet.leftovers import main, marked


def test_only_processes_with_the_mark_are_listed_and_never_the_caller() -> None:
    mark = f"SYNCER_TEST_RUN=unit-{uuid.uuid4().hex}"
    name, _, value = mark.partition("=")
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    ours = subprocess.Popen(sleeper, env={**os.environ, name: value})
    other = subprocess.Popen(sleeper, env={**os.environ, name: "another-run"})
    try:
        found = [pid for pid, _ in marked(mark)]
        assert found == [ours.pid]
        os.environ[name] = value
        try:
            assert [pid for pid, _ in marked(mark)] == [ours.pid], "the caller itself is never listed"
        finally:
            del os.environ[name]
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()
    assert marked(mark) == []


def test_bad_usage_exits_2() -> None:
    assert main([]) == 2
    assert main(["no-equals-sign"]) == 2
