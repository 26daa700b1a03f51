"""What a running fleet costs in memory: each process's RSS and PSS, summed per cluster.

RSS counts every page a process has resident, including the pages of its binary's code that all
kube-apiservers share; PSS divides each shared page among the processes that map it, so PSS summed
over processes is what the fleet takes from the machine. Both are read from ``/proc``.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from devfleet.components import Profile
from devfleet.state import Fleet


@dataclass(frozen=True)
class ProcessMemory:
    cluster: str
    name: str
    pid: int
    rss_kib: int
    pss_kib: int


@dataclass(frozen=True)
class ClusterMemory:
    """One cluster's processes together (etcd, shared by the fleet, is the cluster ``-``)."""

    cluster: str
    profile: str
    processes: int
    rss_kib: int
    pss_kib: int


def status_kib(pid: int, field: str) -> int:
    """A KiB field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``, ...); 0 when absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _pss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def processes(fleet: Fleet) -> list[ProcessMemory]:
    """The memory of every live process of the fleet (a process that exits meanwhile is left out)."""
    found = []
    for proc in fleet.live():
        try:
            rss, pss = status_kib(proc.pid, "VmRSS"), _pss_kib(proc.pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        found.append(ProcessMemory(fleet.cluster_of(proc), proc.name, proc.pid, rss, pss))
    return found


def per_cluster(fleet: Fleet) -> list[ClusterMemory]:
    """Every cluster's memory, and etcd's as the row ``-`` of profile ``shared``."""
    profiles = {c.name: str(c.profile) for c in fleet.clusters}
    grouped: dict[str, list[ProcessMemory]] = defaultdict(list)
    for proc in processes(fleet):
        grouped[proc.cluster].append(proc)
    return [
        ClusterMemory(
            name,
            profiles.get(name, "shared"),
            len(procs),
            sum(p.rss_kib for p in procs),
            sum(p.pss_kib for p in procs),
        )
        for name, procs in sorted(grouped.items())
    ]


@dataclass(frozen=True)
class ProfileSummary:
    """Per-cluster memory of one profile over a fleet, in MiB."""

    profile: str
    clusters: int
    mean_rss: float
    max_rss: float
    mean_pss: float


def summarize(rows: list[ClusterMemory]) -> list[ProfileSummary]:
    summaries = []
    for profile in (Profile.LIGHT, Profile.FULL):
        chosen = [r for r in rows if r.profile == profile]
        if chosen:
            summaries.append(
                ProfileSummary(
                    str(profile),
                    len(chosen),
                    statistics.mean(r.rss_kib for r in chosen) / 1024,
                    max(r.rss_kib for r in chosen) / 1024,
                    statistics.mean(r.pss_kib for r in chosen) / 1024,
                )
            )
    return summaries
