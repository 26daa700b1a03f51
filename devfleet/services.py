"""The fleet's own services beside its clusters (Prometheus, Jaeger): one process each, recorded in
the fleet's state by name so ``down`` and the tests' leak check see it. Owns finding a recorded
service, starting a stopped one again and stopping it; each service module owns its config, its ports
and how it answers ready."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from devfleet import procs
from devfleet.fleet import locked
from devfleet.state import Fleet, Say


def recorded(fleet: Fleet, name: str) -> procs.Proc | None:
    """The process the fleet records as its ``name`` service, running or not."""
    return next((p for p in fleet.processes if p.name == name), None)


def started_again(fleet: Fleet, old: procs.Proc, ready: Callable[[procs.Proc], None], say: Say) -> procs.Proc:
    """``old`` (recorded, no longer running) started again with its command line, recorded in its
    place once saved, then waited for with ``ready``."""
    new = procs.respawn(old)
    fleet.processes[fleet.processes.index(old)] = new
    fleet.save()
    ready(new)
    say(f"started {new.name} again (pid {new.pid})")
    return new


def stop(root: Path, name: str, say: Say = print) -> None:
    """Stop the fleet's ``name`` service; its record stays, so starting it again keeps its ports."""
    with locked(root):
        fleet = Fleet.load(root)
        proc = None if fleet is None else recorded(fleet, name)
        if proc is None or not proc.alive():
            say(f"{name} is not running")
            return
        if procs.stop([proc]):
            raise RuntimeError(f"could not stop {name} (pid {proc.pid})")
        say(f"stopped {name} (pid {proc.pid})")
