"""Web metrics in the rollout policy (``provider: web``): what loads, and what is refused at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.analysis import WebSource
from syncer.config.rollout import load_rollout_policy
from syncer.errors import ConfigError

POLICY = """waves:
  - name: canary
    percent: 100
    analysis:
      metrics:
        - name: errors
          provider: web
          web:
            url: https://metrics.example/errors/${cluster}
            jsonPath: $.data.errors[0]
            tokenFile: token
            caFile: ca.pem
            timeout: 3s
          failureCondition: result > 0.1
"""
M, W = " " * 10, " " * 12  # the indentation of a metric's keys, and of its web section's


def load(tmp_path: Path, text: str) -> WebSource:
    (tmp_path / "ca.pem").write_text("ca")
    (tmp_path / "token").write_text("t")
    path = tmp_path / "rollout.yaml"
    path.write_text(text)
    [wave] = load_rollout_policy(path).waves
    [metric] = wave.gate.analysis.metrics
    assert metric.web is not None
    return metric.web


def load_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return str(caught.value).replace(str(tmp_path / "rollout.yaml"), "rollout.yaml")


def test_a_web_metric_loads_without_a_prometheus_its_files_beside_the_policy(tmp_path: Path) -> None:
    web = load(tmp_path, POLICY)
    assert web == WebSource(
        "https://metrics.example/errors/${cluster}",
        ("data", "errors", 0),
        3.0,
        "GET",
        "",
        str(tmp_path / "ca.pem"),
        str(tmp_path / "token"),
    )


def test_a_body_makes_it_a_post_and_the_timeout_has_a_default(tmp_path: Path) -> None:
    text = POLICY.replace("            timeout: 3s\n", '            body: \'{"c": "${cluster}"}\'\n')
    web = load(tmp_path, text)
    assert (web.method, web.body, web.timeout) == ("POST", '{"c": "${cluster}"}', 10.0)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("metrics.example", "169.254.169.254"), "must not point at 169.254.169.254: a link-local"),
        (("${cluster}", "${shard}"), "metric errors: unknown argument(s) shard"),
        (("$.data.errors[0]", "$.data[*]"), "expected .name, ['key'] or [N]"),
        (("$.data.errors[0]", "data.errors"), "must start with $"),
        (("provider: web", "provider: kayenta"), "must be one of prometheus, web, not 'kayenta'"),
        (("timeout: 3s", "timeout: 0s"), "must be more than 0s"),
        (("tokenFile: token", "tokenFile: ."), "tokenFile"),
        (("provider: web\n", "provider: web\n          query: up\n"), "a web metric has no query"),
        (("failureCondition: result > 0.1", f"baseline: previous\n{M}failureCondition: result > baseline"),
         "a web metric has no baseline"),
        (("timeout: 3s\n", f"method: GET\n{W}body: x\n"), "must be GET or POST"),
        (("tokenFile", f"allowHosts: [169.254.169.254]\n{W}tokenFile"),
         "lists host names"),
    ],
)  # fmt: skip
def test_what_a_web_metric_may_not_say_is_refused_at_load(
    tmp_path: Path, change: tuple[str, str], said: str
) -> None:
    message = load_error(tmp_path, POLICY.replace(*change, 1))
    assert said in message, message
    assert message.startswith("rollout.yaml:"), message


def test_a_web_section_without_provider_web_is_refused(tmp_path: Path) -> None:
    text = POLICY.replace("          provider: web\n", "          query: up\n")
    said = load_error(tmp_path, "prometheus: {url: 'http://prom:9090'}\n" + text)
    assert "web is for provider: web" in said
