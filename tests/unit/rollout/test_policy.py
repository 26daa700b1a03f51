from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from syncer.config.rollout import load_rollout_policy, parse_rollout_policy
from syncer.domain.durations import parse_duration
from syncer.errors import ConfigError

SHIPPED = Path(__file__).resolve().parents[3] / "policies" / "rollout.yaml"


def test_the_shipped_policy_is_1_10_50_100_with_a_labelled_canary() -> None:
    policy = load_rollout_policy(SHIPPED)
    assert [w.percent for w in policy.waves] == [1, 10, 50, 100]
    assert policy.waves[0].selector is not None
    assert policy.waves[0].selector.matches({"tier": "canary"})
    assert policy.rollback is True
    assert policy.waves[0].gate.health_timeout == 600
    assert policy.waves[0].gate.bake == 120


def test_per_wave_gates_override_the_defaults() -> None:
    policy = parse_rollout_policy(
        {
            "defaults": {"bake": "30s"},
            "waves": [{"percent": 5, "bake": "1m", "maxConcurrent": 1}, {"percent": 100}],
        },
        "p.yaml",
    )
    assert (policy.waves[0].gate.bake, policy.waves[0].gate.max_concurrent) == (60, 1)
    assert policy.waves[1].gate.bake == 30
    assert [w.name for w in policy.waves] == ["wave-1", "wave-2"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"waves": []}, "at least one wave"),
        ({"waves": [{"percent": 50}]}, "last wave must reach percent: 100"),
        ({"waves": [{"percent": 50}, {"percent": 10}, {"percent": 100}]}, "less than the previous"),
        ({"waves": [{"percent": 150}]}, "at most 100"),
        ({"waves": [{"percent": 100, "bake": "soon"}]}, "waves[0].bake: 'soon' is not a duration"),
        (
            {
                "waves": [
                    {"percent": 100, "selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}
                ]
            },
            "operator",
        ),
        ({"waves": [{"percent": 100}], "speed": 3}, "unknown key(s) speed"),
        ({"waves": [{"name": "x", "percent": 10}, {"name": "x", "percent": 100}]}, "unique"),
    ],
)
def test_invalid_policies_are_rejected_with_the_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        parse_rollout_policy(data, "rollout.yaml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("rollout.yaml: ")


def test_durations() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("45s") == 45
    assert parse_duration(12) == 12
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("")


def test_a_wave_may_wait_for_a_person_and_a_wrong_approval_names_file_and_line(tmp_path: Path) -> None:
    policy = parse_rollout_policy(
        {"waves": [{"name": "canary", "percent": 1}, {"name": "rest", "percent": 100, "approval": "manual"}]},
        "rollout.yaml",
    )
    assert [w.gate.manual for w in policy.waves] == [False, True]
    path = tmp_path / "rollout.yaml"
    path.write_text("waves:\n  - name: rest\n    percent: 100\n    approval: by-hand\n")
    with pytest.raises(ConfigError) as caught:
        load_rollout_policy(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:4:"), message
    assert "waves[0].approval: must be one of auto, manual, not 'by-hand'" in message


def test_a_rollback_waits_for_health_alone_unless_the_policy_asks_for_its_checks() -> None:
    from syncer.analysis.model import MetricSpec
    from syncer.rollout.waves import for_going_back, plan_waves

    data: dict[str, object] = {"waves": [{"name": "all", "percent": 100, "bake": "5m"}]}
    policy = parse_rollout_policy(data, "rollout.yaml")
    assert policy.rollback_checks is False
    assert parse_rollout_policy({**data, "rollbackChecks": True}, "rollout.yaml").rollback_checks is True
    [wave] = plan_waves({"eu-1": {}}, policy)
    metric = MetricSpec("errors", "1")
    wave = replace(wave, gate=replace(wave.gate, analysis=replace(wave.gate.analysis, metrics=(metric,))))
    fast = for_going_back(wave, checks=False)
    assert (fast.gate.bake, fast.gate.analysis.metrics, fast.gate.health_timeout) == (
        0.0,
        (),
        wave.gate.health_timeout,
    )
    assert for_going_back(wave, checks=True) == wave
