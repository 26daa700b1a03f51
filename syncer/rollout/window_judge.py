"""Maintenance windows: is a cluster inside its window now, and when does it open or close. Pure.

The rules are Argo CD's sync windows, per cluster: no window applies to the cluster -> always open;
allow windows apply -> open only while one of them is active; an active deny window closes it
whatever the allow windows say. An override (an operator's emergency flag, recorded in the cluster's
sync state) opens a closed cluster until it expires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronsim import CronSim

from syncer.config.windows import MaintenanceWindow, WindowKind

# How far ahead the next opening is looked for, and how many starts of one window are looked at.
HORIZON = timedelta(days=400)
_STARTS_PER_WINDOW = 64


@dataclass(frozen=True)
class WindowOverride:
    """An operator's override of the windows for one cluster: why, and until when (epoch seconds)."""

    reason: str
    until: float

    def active(self, now: float) -> bool:
        return bool(self.reason) and now < self.until


@dataclass(frozen=True)
class WindowVerdict:
    """Whether one cluster may change at ``now``. ``opens_at`` (epoch seconds) is when a closed
    cluster opens next (None: not within the horizon); ``closes_at`` when an open one closes (None:
    not bounded by a window)."""

    cluster: str
    open: bool
    reason: str
    opens_at: float | None = None
    closes_at: float | None = None
    overridden: bool = False


def _local(window: MaintenanceWindow, at: datetime) -> datetime:
    return at.astimezone(window.time_zone)


def active_until(window: MaintenanceWindow, at: datetime) -> datetime | None:
    """When the active period of ``window`` that contains ``at`` ends, or None when it is inactive.

    A period runs from a time the schedule fires for ``duration``; periods that overlap or touch
    join into one."""
    # Fire times are whole minutes: the latest at or before ``at`` is the first one before at+1s.
    probe = _local(window, at).replace(microsecond=0) + timedelta(seconds=1)
    start = next(CronSim(window.schedule, probe, reverse=True), None)
    if start is None:
        return None
    end = start.astimezone(UTC) + timedelta(seconds=window.duration)
    if end <= at:
        return None
    cursor = start
    for _ in range(_STARTS_PER_WINDOW):
        following = next(CronSim(window.schedule, cursor), None)
        if following is None or following.astimezone(UTC) > end:
            break
        end = max(end, following.astimezone(UTC) + timedelta(seconds=window.duration))
        cursor = following
    return end


def _starts(window: MaintenanceWindow, after: datetime, until: datetime) -> Iterable[datetime]:
    """The times (UTC) ``window`` fires after ``after`` up to ``until``, at most a bounded count."""
    for count, start in enumerate(CronSim(window.schedule, _local(window, after))):
        utc = start.astimezone(UTC)
        if utc > until or count >= _STARTS_PER_WINDOW:
            return
        yield utc


def is_open(windows: Sequence[MaintenanceWindow], at: datetime) -> bool:
    """Open when no deny window is active and, if there are allow windows, one of them is."""
    if any(w.kind is WindowKind.DENY and active_until(w, at) for w in windows):
        return False
    allows = [w for w in windows if w.kind is WindowKind.ALLOW]
    return not allows or any(active_until(w, at) for w in allows)


def _boundaries(windows: Sequence[MaintenanceWindow], at: datetime) -> list[datetime]:
    """Every time after ``at`` (within the horizon) at which a window starts or ends."""
    found: set[datetime] = set()
    for window in windows:
        end = active_until(window, at)
        if end is not None:
            found.add(end)
        for start in _starts(window, at, at + HORIZON):
            found.add(start)
            found.add(start + timedelta(seconds=window.duration))
    return sorted(t for t in found if t > at)


def next_change(windows: Sequence[MaintenanceWindow], at: datetime) -> datetime | None:
    """The first time after ``at`` at which openness differs from what it is at ``at``."""
    now_open = is_open(windows, at)
    for moment in _boundaries(windows, at):
        if is_open(windows, moment) != now_open:
            return moment
    return None


def _explain(windows: Sequence[MaintenanceWindow], at: datetime) -> str:
    denying = [w.name for w in windows if w.kind is WindowKind.DENY and active_until(w, at)]
    if denying:
        return f"deny window {', '.join(denying)} is active"
    allows = [w for w in windows if w.kind is WindowKind.ALLOW]
    active = [w.name for w in allows if active_until(w, at)]
    if active:
        return f"inside allow window {', '.join(active)}"
    if allows:
        return f"outside its allow windows ({', '.join(w.name for w in allows)})"
    return "no deny window is active"


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def judge_cluster(
    cluster: str,
    labels: Mapping[str, str],
    windows: Sequence[MaintenanceWindow],
    now: float,
    override: WindowOverride | None = None,
) -> WindowVerdict:
    """Whether ``cluster`` (with ``labels``) may change at ``now`` (epoch seconds)."""
    applying = [w for w in windows if w.applies_to(dict(labels))]
    if not applying:
        return WindowVerdict(cluster, True, "no maintenance window applies")
    at = datetime.fromtimestamp(now, UTC)
    change = next_change(applying, at)
    change_at = change.timestamp() if change is not None else None
    reason = _explain(applying, at)
    if is_open(applying, at):
        until = f" until {_time(change)}" if change is not None else ""
        return WindowVerdict(cluster, True, reason + until, closes_at=change_at)
    if override is not None and override.active(now):
        until = _time(datetime.fromtimestamp(override.until, UTC))
        reason = f"{reason}, overridden until {until}: {override.reason}"
        return WindowVerdict(cluster, True, reason, closes_at=override.until, overridden=True)
    when = f"; opens at {_time(change)}" if change is not None else "; does not open within 400 days"
    return WindowVerdict(cluster, False, reason + when, opens_at=change_at)


def judge_clusters(
    labels: Mapping[str, Mapping[str, str]],
    windows: Sequence[MaintenanceWindow],
    now: float,
    overrides: Mapping[str, WindowOverride] | None = None,
) -> tuple[WindowVerdict, ...]:
    """``judge_cluster`` for each cluster (name -> labels), in name order."""
    found = overrides or {}
    return tuple(judge_cluster(name, labels[name], windows, now, found.get(name)) for name in sorted(labels))
