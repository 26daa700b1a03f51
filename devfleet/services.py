"""The fleet's own services beside its clusters (Prometheus, Jaeger): one process each, recorded in
the fleet's state by name so ``down`` and the tests' leak check see it. Owns finding a recorded
service, starting a stopped one again and stopping it; each service module owns its config, its ports
and how it answers ready."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from devfleet import probe, procs
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


def spawned_on_free_ports(
    fleet: Fleet,
    spawn: Callable[[set[int]], procs.Proc],
    ready: Callable[[procs.Proc], None],
    attempts: int,
) -> procs.Proc:
    """A new service process, recorded at once: ``spawn`` starts it on ports free now (avoiding the
    fleet's ``taken`` ones) and ``ready`` waits for it. One that exits because something took a port
    in between is unrecorded and started again on other ports, ``attempts`` times at most."""
    taken = {c.port for c in fleet.clusters} | {fleet.etcd_port}
    for attempt in range(1, attempts + 1):
        proc = spawn(taken)
        fleet.processes.append(proc)
        fleet.save()
        try:
            ready(proc)
        except probe.Exited as exited:
            fleet.processes.remove(proc)
            fleet.save()
            if attempt == attempts or not probe.port_taken(exited.log):
                raise
            continue
        return proc
    raise AssertionError("unreachable")
