"""The leftover check of scripts/test counts only processes carrying the test run's mark, names the
test that started each, and the run's mark survives every test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from devfleet.leftovers import Leftover, main, marked
from tests.support.run_mark import RUN_MARK, TEST_ID

ROOT = Path(__file__).resolve().parents[3]


def test_only_processes_with_the_mark_are_listed_with_their_test_and_never_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mark = f"{RUN_MARK}=unit-{uuid.uuid4().hex}"
    name, _, value = mark.partition("=")
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    ours = subprocess.Popen(sleeper, env={**os.environ, name: value, TEST_ID: "tests/x.py::test_y"})
    other = subprocess.Popen(sleeper, env={**os.environ, name: "another-run"})
    try:
        found = marked(mark)
        assert [f.pid for f in found] == [ours.pid]
        assert found[0].test == "tests/x.py::test_y"
        assert found[0].line().startswith(f"{ours.pid} [tests/x.py::test_y] ")
        assert "time.sleep(30)" in found[0].command
        monkeypatch.setenv(name, value)
        assert [f.pid for f in marked(mark)] == [ours.pid], "the caller itself is never listed"
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()
    assert marked(mark) == []


def test_a_process_started_in_a_test_carries_that_tests_id() -> None:
    """The run_mark plugin sets SYNCER_TEST_ID to the running test's node id."""
    assert os.environ[TEST_ID].endswith("::test_a_process_started_in_a_test_carries_that_tests_id")


def test_a_leftover_without_a_test_says_so() -> None:
    assert Leftover(7, "sleep 30").line() == "7 [no test] sleep 30"


def test_bad_usage_exits_2() -> None:
    assert main([]) == 2
    assert main(["no-equals-sign"]) == 2


def _inner_run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """Run pytest on one test file with the run_mark plugin and a run mark of its own."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.run_mark"]\n')
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(body))
    env = {**os.environ, RUN_MARK: "outer-mark", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )


def test_the_mark_is_restored_after_a_test_that_changes_it_with_monkeypatch(tmp_path: Path) -> None:
    run = _inner_run(
        tmp_path,
        f"""
        import os

        def test_changes_it(monkeypatch):
            monkeypatch.setenv("{RUN_MARK}", "changed")
            monkeypatch.delenv("{RUN_MARK}")

        def test_after_it():
            assert os.environ["{RUN_MARK}"] == "outer-mark"
        """,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout


def test_a_test_that_drops_the_mark_errors_and_the_mark_is_back_for_the_next(tmp_path: Path) -> None:
    run = _inner_run(
        tmp_path,
        f"""
        import os

        def test_drops_it():
            del os.environ["{RUN_MARK}"]

        def test_after_it():
            assert os.environ["{RUN_MARK}"] == "outer-mark"
        """,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 passed, 1 error" in run.stdout, "the test after it saw the mark back"
    assert "test_inner.py::test_drops_it changed SYNCER_TEST_RUN ('outer-mark' -> None)" in run.stdout
