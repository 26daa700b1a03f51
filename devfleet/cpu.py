"""What a running fleet costs in CPU: each cluster's processes' CPU time over a window, as a share
of one core. Read from ``/proc/<pid>/stat`` (user plus system time) at the start and end of the
window; a process that exits meanwhile is left out."""

from __future__ import annotations

import os
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from devfleet.components import Profile
from devfleet.state import Fleet

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ClusterCpu:
    """One cluster's processes together over the window (etcd, shared by the fleet, is ``-``)."""

    cluster: str
    profile: str
    processes: int
    core_share: float  # CPU seconds per second of the window: 1.0 is one core kept busy


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far."""
    # Fields after the command name (which may hold spaces) start at field 3; utime and stime are
    # fields 14 and 15.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _sample(fleet: Fleet) -> dict[int, tuple[str, float]]:
    found = {}
    for proc in fleet.live():
        try:
            found[proc.pid] = (fleet.cluster_of(proc), cpu_seconds(proc.pid))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def per_cluster(fleet: Fleet, window: float) -> list[ClusterCpu]:
    """Every cluster's share of a core over the next ``window`` seconds (this call sleeps that long)."""
    before, started = _sample(fleet), time.monotonic()
    time.sleep(window)
    after, elapsed = _sample(fleet), time.monotonic() - started
    used: dict[str, list[float]] = defaultdict(list)
    for pid, (cluster, seconds) in after.items():
        if pid in before:
            used[cluster].append(seconds - before[pid][1])
    profiles = {c.name: str(c.profile) for c in fleet.clusters}
    return [
        ClusterCpu(name, profiles.get(name, "shared"), len(spent), sum(spent) / elapsed)
        for name, spent in sorted(used.items())
    ]


def mean_by_profile(rows: list[ClusterCpu]) -> dict[str, float]:
    """The mean share of a core per cluster of each profile present."""
    return {
        str(profile): statistics.mean(r.core_share for r in rows if r.profile == profile)
        for profile in (Profile.LIGHT, Profile.FULL)
        if any(r.profile == profile for r in rows)
    }
