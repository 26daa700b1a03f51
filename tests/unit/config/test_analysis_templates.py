"""Analysis templates with arguments: defined once (in the policy or a file it names), used by waves
with values, every problem found at load with its file:line:column."""

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
      - name: window
        value: 2m
    metrics:
      - name: error-rate
        query: sum(rate(redis_errors_total{cluster="${cluster}"}[{{args.window}}]))
        failureCondition: result > {{args.threshold}}
        count: "{{ args.count_ }}"
"""

TEMPLATE = """prometheus: {url: "https://prometheus.example:9090"}
analysisTemplates:
  - name: error-rate
    args:
      - name: threshold
      - name: window
        value: 2m
      - name: count
        value: 1
    metrics:
      - name: error-rate
        query: sum(rate(redis_errors_total{cluster="${cluster}"}[{{args.window}}]))
        failureCondition: result > {{args.threshold}}
        count: "{{args.count}}"
        interval: 1s
"""


def load(tmp_path: Path, text: str, name: str = "rollout.yaml") -> RolloutPolicy:
    path = tmp_path / name
    path.write_text(text)
    return load_rollout_policy(path)


def load_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return str(caught.value).replace(str(tmp_path) + "/", "")


def waves(*uses: str) -> str:
    lines = ["waves:"]
    for index, use in enumerate(uses):
        lines.append(
            f"  - name: w{index}\n    percent: {100 if index == len(uses) - 1 else 10 * (index + 1)}"
        )
        if use:
            lines.append(f"    analysis:\n      templates:\n        - {use}")
    return "\n".join(lines) + "\n"


def test_two_waves_use_one_template_with_their_own_values(tmp_path: Path) -> None:
    policy = load(
        tmp_path,
        TEMPLATE
        + waves(
            "{name: error-rate, args: {threshold: 0.05}}",
            "{name: error-rate, args: {threshold: 0.2, window: 10m, count: 3}}",
        ),
    )
    first, second = (w.gate.analysis.metrics for w in policy.waves)
    assert [(m.name, m.query, m.failure.source if m.failure else "", m.count) for m in first] == [
        ("error-rate", 'sum(rate(redis_errors_total{cluster="${cluster}"}[2m]))', "result > 0.05", 1)
    ]
    assert [(m.query, m.failure.source if m.failure else "", m.count) for m in second] == [
        ('sum(rate(redis_errors_total{cluster="${cluster}"}[10m]))', "result > 0.2", 3)
    ]


def test_templates_may_come_from_a_file_the_policy_names_and_the_defaults_may_use_them(
    tmp_path: Path,
) -> None:
    body = TEMPLATE.split("analysisTemplates:\n", 1)[1]
    (tmp_path / "templates.yaml").write_text("analysisTemplates:\n" + body)
    text = (
        'prometheus: {url: "https://prometheus.example:9090"}\n'
        "analysisTemplatesFile: templates.yaml\n"
        "defaults:\n  analysis:\n    templates:\n      - {name: error-rate, args: {threshold: 0.01}}\n"
        "waves:\n  - {name: canary, percent: 1}\n"
        "  - name: rest\n    percent: 100\n    analysis: {metrics: []}\n"
    )
    canary, rest = load(tmp_path, text).waves
    [metric] = canary.gate.analysis.metrics
    assert metric.failure is not None
    assert metric.failure.source == "result > 0.01"
    assert rest.gate.analysis.metrics == ()


def test_a_wave_may_use_a_template_and_metrics_of_its_own(tmp_path: Path) -> None:
    own = (
        "    analysis:\n      metrics:\n        - {name: own, query: up, failureCondition: result < 1.0}\n"
        "      templates:\n        - {name: error-rate, args: {threshold: 0.1}}\n"
    )
    text = TEMPLATE + "waves:\n  - name: all\n    percent: 100\n" + own
    [wave] = load(tmp_path, text).waves
    assert [m.name for m in wave.gate.analysis.metrics] == ["own", "error-rate"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            TEMPLATE + waves("{name: error-rates, args: {threshold: 0.1}}"),
            "rollout.yaml:21:12: waves[0].analysis.templates[0].name: no analysis template error-rates"
            " (defined: error-rate)",
        ),
        (
            TEMPLATE + waves("{name: error-rate}"),
            "waves[0].analysis.templates[0].args: template error-rate needs argument(s) threshold",
        ),
        (
            TEMPLATE + waves("{name: error-rate, args: {threshold: 0.1, treshold: 0.2}}"),
            "rollout.yaml:21:30: waves[0].analysis.templates[0].args: template error-rate takes no"
            " argument(s) treshold",
        ),
        (
            HEAD + waves(""),
            "rollout.yaml:12:9: analysisTemplates[0].metrics[0].count: template error-rate declares no"
            " argument count_ (args: threshold, window)",
        ),
        (
            TEMPLATE.replace("{{args.threshold}}", "{{threshold}}") + waves(""),
            "rollout.yaml:13:9: analysisTemplates[0].metrics[0].failureCondition: {{threshold}} is not an"
            " argument: write {{args.NAME}}",
        ),
        (
            TEMPLATE + TEMPLATE.split("analysisTemplates:\n", 1)[1] + waves(""),
            "rollout.yaml:16:5: analysisTemplates[1].name: template error-rate is defined twice",
        ),
    ],
)
def test_each_problem_of_a_template_or_its_use_is_found_at_load_with_its_place(
    tmp_path: Path, text: str, said: str
) -> None:
    assert said in load_error(tmp_path, text)


def test_a_metric_that_is_wrong_once_filled_names_the_template_s_line_and_the_use(tmp_path: Path) -> None:
    said = load_error(tmp_path, TEMPLATE + waves("{name: error-rate, args: {threshold: 'x +'}}"))
    assert said.startswith("rollout.yaml:13:"), said
    assert "metric error-rate: failureCondition" in said
    assert "(template error-rate as used at rollout.yaml:21:12 by waves[0].analysis.templates[0]" in said
    assert "with count=1, threshold=x +, window=2m)" in said
    window = load_error(
        tmp_path, TEMPLATE + waves("{name: error-rate, args: {threshold: 0.1, window: '5 m'}}")
    )
    assert "rollout.yaml:12:" in window
    assert "metric error-rate: not valid PromQL" in window, window


def test_two_templates_bringing_one_metric_name_do_not_load(tmp_path: Path) -> None:
    text = TEMPLATE + (
        "waves:\n  - name: all\n    percent: 100\n    analysis:\n      templates:\n"
        "        - {name: error-rate, args: {threshold: 0.1}}\n"
        "        - {name: error-rate, args: {threshold: 0.2}}\n"
    )
    assert "metric names must be unique, also those the templates bring: error-rate" in load_error(
        tmp_path, text
    )
