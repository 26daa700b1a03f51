from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from devfleet import procs


def test_stop_terminates_a_started_process(tmp_path: Path) -> None:
    sleeper = procs.spawn("sleeper", [shutil.which("sleep") or "sleep", "300"], tmp_path / "log", tmp_path)
    assert sleeper.alive()
    assert procs.stop([sleeper]) == []
    assert not sleeper.alive()


def test_a_process_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    stubborn = procs.spawn(
        "stubborn", ["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"], tmp_path / "log", tmp_path
    )
    assert procs.stop([stubborn], grace=0.5) == []
    assert not stubborn.alive()


def test_a_recorded_pid_with_another_start_time_is_not_ours(tmp_path: Path) -> None:
    sleeper = procs.spawn("sleeper", ["sleep", "300"], tmp_path / "log", tmp_path)
    try:
        impostor = procs.Proc("sleeper", sleeper.pid, sleeper.start_ticks + 1, sleeper.log)
        assert not impostor.alive()
        assert procs.stop([impostor]) == []
        assert sleeper.alive(), "stop() must not signal a process whose start time differs"
    finally:
        procs.stop([sleeper])


def test_the_json_form_round_trips(tmp_path: Path) -> None:
    proc = procs.Proc("etcd", 1234, 5678, str(tmp_path / "etcd.log"), ("bin/etcd", "--name=x"), str(tmp_path))
    assert procs.Proc.from_json(json.loads(json.dumps(proc.to_json()))) == proc


def test_a_process_started_again_runs_the_same_command_in_the_same_place(tmp_path: Path) -> None:
    first = procs.spawn("sleeper", ["sleep", "300"], tmp_path / "log", tmp_path)
    assert procs.stop([first]) == []
    again = procs.respawn(first)
    try:
        assert again.alive()
        assert again.pid != first.pid
        assert (again.name, again.argv, again.log, again.cwd) == (
            first.name,
            first.argv,
            first.log,
            first.cwd,
        )
        assert Path(f"/proc/{again.pid}/cwd").resolve() == tmp_path.resolve()
        # Right after the fork the child may not have exec'd yet (its command line is empty then).
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{again.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Path(f"/proc/{again.pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"300"]
    finally:
        procs.stop([again])


def test_a_process_recorded_without_its_command_line_cannot_be_started_again(tmp_path: Path) -> None:
    older = procs.Proc.from_json({"name": "etcd", "pid": 1234, "start_ticks": 5678, "log": "etcd.log"})
    assert older.argv == ()
    with pytest.raises(RuntimeError, match="without its command line"):
        procs.respawn(older)
