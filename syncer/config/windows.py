"""Maintenance windows of the rollout policy: when waves may change which clusters.

A window is a cron schedule (five fields, read in the window's time zone), a duration and a kind:
``allow`` windows are the only times matching clusters may change, ``deny`` windows are times they
must not (a deny window wins over an allow window). Time zones are resolved here, at load, so the
rollout stage that judges windows never reads the time zone database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from syncer.config.loading import Fields
from syncer.config.shapes import parse_selector
from syncer.domain.durations import parse_duration
from syncer.domain.selectors import LabelSelector

_KEYS = {"name", "kind", "schedule", "duration", "timeZone", "clusters", "description"}


class WindowKind(StrEnum):
    ALLOW = "allow"
    DENY = "deny"


@dataclass(frozen=True)
class MaintenanceWindow:
    """One window: it is active from each time ``schedule`` fires (in ``time_zone``) for ``duration``
    seconds, for the clusters matching ``clusters`` (every cluster when None)."""

    name: str
    kind: WindowKind
    schedule: str
    duration: float
    time_zone: tzinfo
    clusters: LabelSelector | None = None

    def applies_to(self, labels: dict[str, str]) -> bool:
        return self.clusters is None or self.clusters.matches(labels)


def _zone(fields: Fields) -> tzinfo:
    name = fields.string("timeZone", "UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise fields.error("timeZone", f"{name!r} is not a time zone such as UTC or Europe/Berlin") from None


def parse_window(fields: Fields, index: int) -> MaintenanceWindow:
    """One entry of the rollout policy's ``windows:`` list; errors name the file and key."""
    fields.reject_unknown(_KEYS)
    kind_text = fields.string("kind")
    if kind_text not in {str(k) for k in WindowKind}:
        raise fields.error("kind", f"must be allow or deny, not {kind_text!r}")
    schedule = fields.string("schedule")
    zone = _zone(fields)
    try:
        CronSim(schedule, datetime(2000, 1, 1, tzinfo=zone))
    except CronSimError as err:
        problem = f"{schedule!r} is not a cron schedule (minute hour day-of-month month day-of-week): {err}"
        raise fields.error("schedule", problem) from None
    try:
        duration = parse_duration(fields.raw("duration")) if fields.has("duration") else 0.0
    except ValueError as err:
        raise fields.error("duration", str(err)) from None
    if duration <= 0:
        raise fields.error("duration", "is required: how long the window stays open, such as 2h")
    selector = parse_selector(fields.child("clusters")) if fields.has("clusters") else None
    return MaintenanceWindow(
        name=fields.string("name", f"window-{index + 1}"),
        kind=WindowKind(kind_text),
        schedule=schedule,
        duration=duration,
        time_zone=zone,
        clusters=selector,
    )
