from __future__ import annotations

import shutil
from pathlib import Path

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
    proc = procs.Proc("etcd", 1234, 5678, str(tmp_path / "etcd.log"))
    assert procs.Proc.from_json(proc.to_json()) == proc
