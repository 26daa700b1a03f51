"""Start and stop the fleet's processes, identified by PID and start time so a reused PID is never hit."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


def _start_ticks(pid: int) -> int | None:
    """The process start time in clock ticks since boot, or None when no such process runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # a zombie has exited already
        return None
    return int(fields[19])


@dataclass(frozen=True)
class Proc:
    """One started process of the fleet."""

    name: str
    pid: int
    start_ticks: int
    log: str
    # How it was started, so that it can be started again the same way (empty in older state files).
    argv: tuple[str, ...] = ()
    cwd: str = ""
    # Environment variables set on top of the starting process's own (sorted name, value pairs).
    env: tuple[tuple[str, str], ...] = ()

    def alive(self) -> bool:
        owned = _CHILDREN.get(self.pid)
        if owned is not None:
            # Our own child: ask waitpid, not /proc, which shows the main thread of a Go program as a
            # zombie while its other threads are still exiting.
            child, ticks = owned
            if child.poll() is not None:
                del _CHILDREN[self.pid]
                return False
            return ticks == self.start_ticks
        return _start_ticks(self.pid) == self.start_ticks

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["argv"] = list(self.argv)
        data["env"] = dict(self.env)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Proc:
        return Proc(
            str(data["name"]),
            int(data["pid"]),
            int(data["start_ticks"]),
            str(data["log"]),
            tuple(str(arg) for arg in data.get("argv", ())),
            str(data.get("cwd", "")),
            tuple(sorted((str(k), str(v)) for k, v in (data.get("env") or {}).items())),
        )


# Children started by this interpreter, kept so they are reaped (and not reported as leaked) when stopped.
_CHILDREN: dict[int, tuple[subprocess.Popen[bytes], int]] = {}


def spawn(name: str, argv: list[str], log: Path, cwd: Path, env: Mapping[str, str] | None = None) -> Proc:
    """Start ``argv`` in its own session with output to ``log`` and ``env`` added to this process's
    environment; it outlives the caller until stopped."""
    with log.open("ab") as out:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ, **env} if env else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ticks = _start_ticks(child.pid)
    if ticks is None:
        child.wait()
        raise RuntimeError(f"{name} exited at once; see {log}")
    _CHILDREN[child.pid] = (child, ticks)
    return Proc(name, child.pid, ticks, str(log), tuple(argv), str(cwd), tuple(sorted((env or {}).items())))


def respawn(proc: Proc) -> Proc:
    """Start ``proc`` again with the command line, log and working directory it was started with."""
    if not proc.argv or not proc.cwd:
        raise RuntimeError(f"{proc.name} (pid {proc.pid}) was recorded without its command line")
    return spawn(proc.name, list(proc.argv), Path(proc.log), Path(proc.cwd), dict(proc.env))


def _reap(pid: int) -> None:
    owned = _CHILDREN.get(pid)
    if owned is not None and owned[0].poll() is not None:
        del _CHILDREN[pid]


def stop(procs: list[Proc], grace: float = 10.0) -> list[Proc]:
    """SIGTERM every live process, SIGKILL what remains after ``grace`` seconds; return any survivors."""
    live = [p for p in procs if p.alive()]
    for p in live:
        os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        for p in live:
            _reap(p.pid)
        live = [p for p in live if p.alive()]
        if live:
            time.sleep(0.1)
    for p in live:
        os.kill(p.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while live and time.monotonic() < deadline:
        for p in live:
            _reap(p.pid)
        live = [p for p in live if p.alive()]
        if live:
            time.sleep(0.05)
    for p in procs:
        _reap(p.pid)
    return live
