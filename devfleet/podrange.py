"""Loopback pod ranges claimed exclusively, so fleets on one machine never hand out the same pod IP.

A fleet whose pods get loopback IPs (kwok ``--cidr`` inside 127.0.0.0/8) lets tests run real servers
"in" its pods. Two fleets with the same range would give two pods the same IP. ``claim`` picks a
free ``127.N.0.0/16`` and records the claim in a lock file under the system temp directory,
``syncer-podrange-127.N.lock``, holding the owner's PID and start time. A claim whose owner no
longer runs (or whose PID now belongs to another process) is taken over; ``release`` removes it.
Claims are made under an ``flock`` on one guard file, so two claimers never pick the same range.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devfleet.procs import _start_ticks

# 127.0.0.0/16 is where localhost services live; start well above it.
FIRST_OCTET = 64
LAST_OCTET = 250
_PREFIX = "syncer-podrange-"


def lock_dir() -> Path:
    """Where claims are recorded: the system temp directory, shared by every user of the machine."""
    return Path(tempfile.gettempdir())


@dataclass(frozen=True)
class PodRange:
    """One claimed ``127.N.0.0/16``; ``cidr`` is what kwok's ``--cidr`` takes (``127.N.0.1/16``)."""

    octet: int
    lock: Path
    owner: int

    @property
    def cidr(self) -> str:
        return f"127.{self.octet}.0.1/16"

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"127.{self.octet}.0.0/16")

    def cidr_of(self, index: int, count: int) -> str:
        """The ``--cidr`` of the ``index``-th of ``count`` clusters sharing the range: each its own
        equal part of the /16 (kwok hands out pod IPs per cluster, so clusters given the same range
        would give two pods the same IP)."""
        if not 0 <= index < count:
            raise ValueError(f"cluster {index} of {count}")
        bits = (count - 1).bit_length()
        part = list(self.network.subnets(prefixlen_diff=bits))[index]
        return f"{part.network_address + 1}/{part.prefixlen}"

    def contains(self, ip: str) -> bool:
        try:
            return ipaddress.ip_address(ip) in self.network
        except ValueError:
            return False

    def to_json(self) -> dict[str, object]:
        return {"octet": self.octet, "lock": str(self.lock), "owner": self.owner}

    @staticmethod
    def from_json(data: dict[str, object]) -> PodRange:
        return PodRange(int(str(data["octet"])), Path(str(data["lock"])), int(str(data["owner"])))


class NoFreeRange(RuntimeError):
    """Every loopback range is claimed by a running process."""


@contextmanager
def _guarded(where: Path) -> Iterator[None]:
    where.mkdir(parents=True, exist_ok=True)
    with (where / f"{_PREFIX}guard").open("a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)


def _lock_path(where: Path, octet: int) -> Path:
    return where / f"{_PREFIX}127.{octet}.lock"


def _holder(path: Path) -> tuple[int, int] | None:
    """(pid, start ticks) recorded in a claim, or None when it is unreadable."""
    try:
        pid, ticks = path.read_text().split()[:2]
        return int(pid), int(ticks)
    except (OSError, ValueError):
        return None


def _live(holder: tuple[int, int] | None) -> bool:
    return holder is not None and _start_ticks(holder[0]) == holder[1]


def claim(owner: int | None = None, where: Path | None = None) -> PodRange:
    """Claim the first free loopback /16 for ``owner`` (a PID, default this process).

    The claim lasts until ``release`` or until ``owner`` stops running. Raises ``NoFreeRange``.
    """
    pid = os.getpid() if owner is None else owner
    ticks = _start_ticks(pid)
    if ticks is None:
        raise ValueError(f"no running process {pid} to own a pod range")
    where = where or lock_dir()
    with _guarded(where):
        for octet in range(FIRST_OCTET, LAST_OCTET + 1):
            path = _lock_path(where, octet)
            if path.exists() and _live(_holder(path)):
                continue
            partial = path.with_name(f"{path.name}.{pid}.new")
            partial.write_text(f"{pid} {ticks}\n")
            partial.replace(path)
            return PodRange(octet, path, pid)
    raise NoFreeRange(f"every loopback range 127.{FIRST_OCTET}-{LAST_OCTET}.0.0/16 is claimed")


def hand_over(held: PodRange, owner: int) -> PodRange:
    """Make ``owner`` the holder of ``held`` (e.g. a long-lived process of the fleet)."""
    ticks = _start_ticks(owner)
    if ticks is None:
        raise ValueError(f"no running process {owner} to take over {held.cidr}")
    with _guarded(held.lock.parent):
        if _holder(held.lock) != (held.owner, _start_ticks(held.owner)):
            raise ValueError(f"{held.cidr} is no longer held by process {held.owner}")
        partial = held.lock.with_name(f"{held.lock.name}.{owner}.new")
        partial.write_text(f"{owner} {ticks}\n")
        partial.replace(held.lock)
    return PodRange(held.octet, held.lock, owner)


def release(held: PodRange) -> bool:
    """Remove the claim if it is still ``held``'s (its owner PID); True when it was removed."""
    with _guarded(held.lock.parent):
        holder = _holder(held.lock)
        if holder is None or holder[0] != held.owner:
            return False
        held.lock.unlink(missing_ok=True)
        return True
