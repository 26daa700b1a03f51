"""Maintenance windows: allow/deny per cluster selector, time zones, DST, overlaps, overrides."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo

import pytest

from syncer.config.rollout import parse_rollout_policy
from syncer.config.windows import MaintenanceWindow, WindowKind
from syncer.domain.selectors import LabelSelector
from syncer.errors import ConfigError
from syncer.rollout import WindowOverride, judge_cluster, judge_clusters
from syncer.rollout.window_judge import active_until, next_change

BERLIN = ZoneInfo("Europe/Berlin")
PROD = LabelSelector((("tier", "prod"),))


def at(year: int, month: int, day: int, hour: int, minute: int = 0, *, zone: tzinfo = UTC) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=zone).timestamp()


def window(
    kind: WindowKind, schedule: str, hours: float, zone: tzinfo = UTC, clusters: LabelSelector | None = None
) -> MaintenanceWindow:
    return MaintenanceWindow(f"{kind}-{schedule}", kind, schedule, hours * 3600, zone, clusters)


NIGHTS = window(WindowKind.ALLOW, "0 22 * * *", 4, BERLIN)
FREEZE = window(WindowKind.DENY, "0 0 24 12 *", 72)


def test_no_window_means_always_open() -> None:
    verdict = judge_cluster("eu-1", {}, [], at(2026, 12, 2, 12))
    assert (verdict.open, verdict.reason, verdict.opens_at, verdict.closes_at) == (
        True,
        "no maintenance window applies",
        None,
        None,
    )


def test_an_allow_window_in_its_time_zone() -> None:
    before = judge_cluster("eu-1", {}, [NIGHTS], at(2026, 12, 2, 21, 59, zone=BERLIN))
    assert not before.open
    assert before.reason == "outside its allow windows (allow-0 22 * * *); opens at 2026-12-02 21:00 UTC"
    assert before.opens_at == at(2026, 12, 2, 22, 0, zone=BERLIN)
    inside = judge_cluster("eu-1", {}, [NIGHTS], at(2026, 12, 2, 22, 0, zone=BERLIN))
    assert inside.open
    assert inside.reason == "inside allow window allow-0 22 * * * until 2026-12-03 01:00 UTC"
    assert inside.closes_at == at(2026, 12, 3, 2, 0, zone=BERLIN)
    # The end is exclusive: at 02:00 the window is closed again.
    assert not judge_cluster("eu-1", {}, [NIGHTS], at(2026, 12, 3, 2, 0, zone=BERLIN)).open


def test_deny_wins_over_allow_and_the_opening_accounts_for_both() -> None:
    verdict = judge_cluster("eu-1", {}, [NIGHTS, FREEZE], at(2026, 12, 24, 23, 0, zone=BERLIN))
    assert not verdict.open
    assert verdict.reason == "deny window deny-0 0 24 12 * is active; opens at 2026-12-27 00:00 UTC"
    # The freeze ends at 01:00 Berlin time, inside that night's allow window.
    assert verdict.opens_at == at(2026, 12, 27, 1, 0, zone=BERLIN)


def test_a_deny_window_alone_leaves_other_times_open() -> None:
    verdict = judge_cluster("eu-1", {}, [FREEZE], at(2026, 12, 2, 12))
    assert verdict.open
    assert verdict.reason == "no deny window is active until 2026-12-24 00:00 UTC"


def test_windows_apply_to_clusters_by_selector() -> None:
    prod_nights = window(WindowKind.ALLOW, "0 22 * * *", 4, BERLIN, PROD)
    verdicts = judge_clusters(
        {"canary": {"tier": "canary"}, "eu-1": {"tier": "prod"}}, [prod_nights], at(2026, 12, 2, 12)
    )
    assert [(v.cluster, v.open) for v in verdicts] == [("canary", True), ("eu-1", False)]


def test_daylight_saving_time_keeps_wall_clock_times() -> None:
    # Berlin moves to summer time on 2027-03-28: 22:00 local is 21:00 UTC before and 20:00 UTC after.
    assert judge_cluster("eu-1", {}, [NIGHTS], at(2027, 3, 27, 21, 30)).open
    assert judge_cluster("eu-1", {}, [NIGHTS], at(2027, 3, 28, 20, 30)).open
    assert not judge_cluster("eu-1", {}, [NIGHTS], at(2027, 3, 28, 19, 59)).open
    # A window that fires at 02:30 on the night 02:00-03:00 does not exist fires at 03:00 instead.
    early = window(WindowKind.ALLOW, "30 2 * * *", 1, BERLIN)
    assert judge_cluster("eu-1", {}, [early], at(2027, 3, 28, 3, 10, zone=BERLIN)).open


def test_overlapping_periods_join() -> None:
    every_ten = window(WindowKind.ALLOW, "*/10 * * * *", 0.25)
    end = active_until(every_ten, datetime(2026, 12, 2, 12, 3, tzinfo=UTC))
    assert end is not None
    assert end > datetime(2026, 12, 2, 13, 0, tzinfo=UTC)
    touching = window(WindowKind.ALLOW, "0 * * * *", 1)
    assert active_until(touching, datetime(2026, 12, 2, 12, 30, tzinfo=UTC)) is not None


def test_an_override_opens_a_closed_cluster_until_it_expires() -> None:
    now = at(2026, 12, 2, 12)
    override = WindowOverride("incident 4711: hotfix", until=now + 600)
    verdict = judge_cluster("eu-1", {}, [NIGHTS], now, override)
    assert (verdict.open, verdict.overridden, verdict.closes_at) == (True, True, now + 600)
    assert verdict.reason == (
        "outside its allow windows (allow-0 22 * * *), overridden until 2026-12-02 12:10 UTC:"
        " incident 4711: hotfix"
    )
    assert not judge_cluster("eu-1", {}, [NIGHTS], now + 600, override).open
    assert not judge_cluster("eu-1", {}, [NIGHTS], now, WindowOverride("", now + 600)).open


def test_a_window_beyond_the_horizon_is_reported_as_not_opening() -> None:
    leap_day = window(WindowKind.ALLOW, "0 0 29 2 *", 1)
    # The next 29 February is 454 days after 2 December 2026, beyond the 400 days looked at.
    verdict = judge_cluster("eu-1", {}, [leap_day], at(2026, 12, 2, 12))
    assert (verdict.open, verdict.opens_at) == (False, None)
    assert verdict.reason == "outside its allow windows (allow-0 0 29 2 *); does not open within 400 days"
    assert next_change([leap_day], datetime(2027, 12, 2, tzinfo=UTC)) == datetime(2028, 2, 29, tzinfo=UTC)


def test_windows_in_the_rollout_policy() -> None:
    data = {
        "waves": [{"name": "all", "percent": 100}],
        "windows": [
            {
                "name": "prod-nights",
                "kind": "allow",
                "schedule": "0 22 * * 1-5",
                "duration": "4h",
                "timeZone": "Europe/Berlin",
                "clusters": {"matchLabels": {"tier": "prod"}},
            },
            {"name": "freeze", "kind": "deny", "schedule": "0 0 24 12 *", "duration": "72h"},
        ],
    }
    policy = parse_rollout_policy(data, "rollout.yaml")
    nights, freeze = policy.windows
    assert (nights.kind, nights.duration, nights.time_zone, nights.clusters) == (
        WindowKind.ALLOW,
        14400.0,
        BERLIN,
        PROD,
    )
    assert (freeze.kind, freeze.time_zone) == (WindowKind.DENY, ZoneInfo("UTC"))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"kind": "sometimes", "schedule": "0 22 * * *", "duration": "1h"},
            "rollout.yaml: windows[0].kind: must be allow or deny, not 'sometimes'",
        ),
        (
            {"kind": "allow", "schedule": "0 25 * * *", "duration": "1h"},
            "rollout.yaml: windows[0].schedule: '0 25 * * *' is not a cron schedule (minute hour day-of-month"
            " month day-of-week): Bad hour",
        ),
        (
            {"kind": "allow", "schedule": "0 22 * *", "duration": "1h"},
            "rollout.yaml: windows[0].schedule: '0 22 * *' is not a cron schedule (minute hour day-of-month"
            " month day-of-week): Wrong number of fields",
        ),
        (
            {"kind": "allow", "schedule": "0 22 * * *"},
            "rollout.yaml: windows[0].duration: is required: how long the window stays open, such as 2h",
        ),
        (
            {"kind": "allow", "schedule": "0 22 * * *", "duration": "soon"},
            "rollout.yaml: windows[0].duration: 'soon' is not a duration like 30s, 5m or 1h30m",
        ),
        (
            {"kind": "allow", "schedule": "0 22 * * *", "duration": "1h", "timeZone": "Mars/Olympus"},
            "rollout.yaml: windows[0].timeZone: 'Mars/Olympus' is not a time zone such as UTC or"
            " Europe/Berlin",
        ),
        (
            {"kind": "allow", "schedule": "0 22 * * *", "duration": "1h", "manualSync": True},
            "rollout.yaml: windows[0]: unknown key(s) manualSync",
        ),
    ],
)
def test_window_errors_name_the_file_and_key(entry: dict[str, object], message: str) -> None:
    data = {"waves": [{"name": "all", "percent": 100}], "windows": [entry]}
    with pytest.raises(ConfigError) as caught:
        parse_rollout_policy(data, "rollout.yaml")
    assert str(caught.value).startswith(message)
