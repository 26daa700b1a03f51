"""Loading the analysis sections of the rollout policy: every problem found at load, with its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.analysis import Baseline
from syncer.config.rollout import load_rollout_policy
from syncer.errors import ConfigError

HEAD = """prometheus:
  url: https://prometheus.example:9090/
  caFile: ca.pem
  clusters:
    eu-1: {url: "http://eu-1-prometheus:9090"}
defaults:
  bake: 10s
  analysis:
    metrics:
      - name: error-rate
        query: sum(rate(redis_errors_total{cluster="${cluster}"}[1m]))
"""


def load(tmp_path: Path, text: str) -> object:
    (tmp_path / "ca.pem").touch()
    path = tmp_path / "rollout.yaml"
    path.write_text(text)
    return load_rollout_policy(path)


def load_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return str(caught.value).replace(str(tmp_path / "rollout.yaml"), "rollout.yaml")


def test_defaults_apply_to_every_wave_and_a_wave_may_replace_them(tmp_path: Path) -> None:
    text = (
        HEAD
        + "        interval: 30s\n        count: 4\n        dryRun: true\n"
        + "        successCondition: result <= baseline * 1.2 + 0.001\n        baseline: previous\n"
        + "waves:\n  - {name: canary, percent: 1}\n"
        + "  - name: rest\n    percent: 100\n    analysis: {metrics: []}\n"
    )
    policy = load(tmp_path, text)
    canary, rest = policy.waves  # type: ignore[attr-defined]
    (metric,) = canary.gate.analysis.metrics
    assert (metric.name, metric.interval, metric.count, metric.dry_run) == ("error-rate", 30.0, 4, True)
    assert metric.baseline is Baseline.PREVIOUS
    assert metric.success is not None
    assert metric.success.source == "result <= baseline * 1.2 + 0.001"
    assert canary.gate.analysis.source_for("eu-1").url == "http://eu-1-prometheus:9090"
    assert canary.gate.analysis.source_for("us-1").url == "https://prometheus.example:9090"
    assert canary.gate.analysis.source_for("us-1").ca_file == str(tmp_path / "ca.pem")
    assert rest.gate.analysis.metrics == ()
    assert canary.gate.analysis.describe() == "error-rate (4x every 30s, dry run)"


def test_the_ca_and_token_files_are_found_beside_the_policy_and_checked_at_load(tmp_path: Path) -> None:
    text = HEAD + "        failureCondition: result > 0.1\nwaves:\n  - {percent: 100}\n"
    with_token = text.replace("  caFile: ca.pem\n", "  caFile: ca.pem\n  tokenFile: token\n")
    (tmp_path / "token").mkdir()
    assert "tokenFile" in load_error(tmp_path, with_token), "a directory is no token file"
    (tmp_path / "token").rmdir()
    (tmp_path / "token").write_text("secret\n")
    source = load(tmp_path, with_token).waves[0].gate.analysis.prometheus  # type: ignore[attr-defined]
    assert (source.ca_file, source.token_file) == (str(tmp_path / "ca.pem"), str(tmp_path / "token"))


def test_a_duration_gives_the_count(tmp_path: Path) -> None:
    text = HEAD + "        interval: 1m\n        duration: 5m\n        failureCondition: result > 0.1\n"
    policy = load(tmp_path, text + "waves:\n  - {percent: 100}\n")
    assert policy.waves[0].gate.analysis.metrics[0].count == 5  # type: ignore[attr-defined]


def test_a_condition_that_does_not_type_check_names_line_and_column(tmp_path: Path) -> None:
    text = HEAD + "        successCondition: result < 1\nwaves:\n  - {percent: 100}\n"
    assert load_error(tmp_path, text) == (
        "rollout.yaml:12:34: metric error-rate: successCondition:"
        " found no matching overload for '_<_' applied to '(double, int)'"
    )


def test_a_threshold_beyond_a_double_is_refused_it_would_read_as_infinity(tmp_path: Path) -> None:
    text = HEAD + "        successCondition: result <= 1e999\nwaves:\n  - {percent: 100}\n"
    assert load_error(tmp_path, text) == (
        "rollout.yaml:12:37: metric error-rate: successCondition:"
        " the number 1e999 is beyond a double: write a finite one"
    )
    digits = "9" * 5000
    text = HEAD + f"        failureCondition: result > {digits}.0\nwaves:\n  - {{percent: 100}}\n"
    assert "(5002 characters) is beyond a double" in load_error(tmp_path, text)


def test_an_unknown_variable_in_a_condition(tmp_path: Path) -> None:
    text = HEAD + "        failureCondition: reslt > 0.1\nwaves:\n  - {percent: 100}\n"
    assert load_error(tmp_path, text) == (
        "rollout.yaml:12:27: metric error-rate: failureCondition: undeclared reference to 'reslt'"
    )


def test_baseline_used_without_one_is_refused(tmp_path: Path) -> None:
    text = HEAD + "        successCondition: result <= baseline\nwaves:\n  - {percent: 100}\n"
    assert "uses baseline but sets none" in load_error(tmp_path, text)


def test_a_query_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    broken = HEAD.replace("[1m]))", "[1m])")
    text = broken + "        failureCondition: result > 0.1\nwaves:\n  - {percent: 100}\n"
    assert load_error(tmp_path, text) == (
        "rollout.yaml:11:9: defaults.analysis.metrics[0].query: metric error-rate:"
        " not valid PromQL: unclosed left parenthesis"
    )


def test_an_unknown_template_argument_is_refused(tmp_path: Path) -> None:
    text = (
        HEAD.replace("${cluster}", "${clustr}")
        + "        failureCondition: result > 0.1\nwaves:\n  - {percent: 100}\n"
    )
    assert "unknown argument(s) clustr (known: cluster, namespace, name, revision, wave)" in load_error(
        tmp_path, text
    )


def test_metrics_without_a_prometheus_are_refused(tmp_path: Path) -> None:
    text = HEAD.split("defaults:")[1]
    text = "defaults:" + text + "        failureCondition: result > 0.1\nwaves:\n  - {percent: 100}\n"
    assert "no Prometheus to query" in load_error(tmp_path, text)


def test_a_metric_without_a_condition_is_refused(tmp_path: Path) -> None:
    assert "give successCondition, failureCondition or both" in load_error(
        tmp_path, HEAD + "waves:\n  - {percent: 100}\n"
    )


def test_a_prometheus_url_at_a_metadata_address_is_refused_and_allow_hosts_is_read(tmp_path: Path) -> None:
    said = load_error(
        tmp_path, HEAD.replace("https://prometheus.example:9090/", "http://[::ffff:169.254.169.254]/")
    )
    assert "must not point at 169.254.169.254: a link-local, unspecified or multicast address" in said
    text = HEAD.replace("  caFile: ca.pem\n", "  caFile: ca.pem\n  allowHosts: [prom.internal]\n")
    policy = load(
        tmp_path, text + "        successCondition: result < 1.0\nwaves:\n  - {name: canary, percent: 100}\n"
    )
    (canary,) = policy.waves  # type: ignore[attr-defined]
    assert canary.gate.analysis.source_for("us-1").allow_hosts == ("prom.internal",)
