"""Loading the rollout policy's background analysis (``analysis.background``): the same metrics and
templates as a wave's analysis, checked at load with file:line:column."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, load_rollout_policy
from syncer.errors import ConfigError

HEAD = """prometheus: {url: "https://prometheus.example:9090"}
analysisTemplates:
  - name: error-rate
    args:
      - name: threshold
    metrics:
      - name: error-rate
        query: sum(rate(redis_errors_total{cluster="${cluster}"}[1m]))
        failureCondition: result > {{args.threshold}}
waves:
  - {name: canary, percent: 1}
  - {name: rest, percent: 100}
"""


def load(tmp_path: Path, text: str) -> RolloutPolicy:
    path = tmp_path / "rollout.yaml"
    path.write_text(text)
    return load_rollout_policy(path)


def load_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return str(caught.value).replace(str(tmp_path / "rollout.yaml"), "rollout.yaml")


def test_background_metrics_and_templates_load_apart_from_the_waves(tmp_path: Path) -> None:
    text = HEAD + (
        "analysis:\n  background:\n    metrics:\n"
        '      - name: rejected\n        query: sum(redis_rejected{cluster="${cluster}"})\n'
        "        failureCondition: result > 0.0\n        interval: 30s\n        failureLimit: 1\n"
        "    templates:\n      - {name: error-rate, args: {threshold: 0.01}}\n"
    )
    policy = load(tmp_path, text)
    background = policy.background
    assert [m.name for m in background.metrics] == ["rejected", "error-rate"]
    rejected, templated = background.metrics
    assert (rejected.interval, rejected.failure_limit) == (30.0, 1)
    assert templated.failure is not None
    assert templated.failure.source == "result > 0.01"
    assert background.source_for("eu-1") is not None
    assert all(w.gate.analysis.metrics == () for w in policy.waves), "the waves judge by health alone"


def test_no_background_section_is_no_background_analysis(tmp_path: Path) -> None:
    assert load(tmp_path, HEAD).background.metrics == ()


def test_a_background_condition_that_does_not_type_check_names_line_and_column(tmp_path: Path) -> None:
    text = HEAD + (
        "analysis:\n  background:\n    metrics:\n"
        "      - name: rejected\n        query: sum(redis_rejected)\n        failureCondition: result > 0\n"
    )
    assert load_error(tmp_path, text) == (
        "rollout.yaml:18:34: metric rejected: failureCondition:"
        " found no matching overload for '_>_' applied to '(double, int)'"
    )


def test_an_unknown_key_under_analysis_is_refused_with_its_place(tmp_path: Path) -> None:
    said = load_error(tmp_path, HEAD + "analysis:\n  backgrund: {metrics: []}\n")
    assert said.startswith("rollout.yaml:"), said
    assert "backgrund" in said


def test_background_metrics_need_a_prometheus(tmp_path: Path) -> None:
    text = HEAD.replace('prometheus: {url: "https://prometheus.example:9090"}\n', "") + (
        "analysis:\n  background:\n    metrics:\n"
        "      - {name: rejected, query: sum(redis_rejected), failureCondition: result > 0.0}\n"
    )
    said = load_error(tmp_path, text)
    assert "no Prometheus to query" in said, said
    assert said.startswith("rollout.yaml:"), said
