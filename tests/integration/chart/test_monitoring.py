"""What the chart ships around syncer's metrics, as the real helm renders it: the PrometheusRule
(checked and unit-tested with the real promtool: every alert seen firing and not firing), the
ServiceMonitor of the agent and the controller, and the Grafana dashboard."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from syncer.controller.children import client_service, headless_service
from syncer.controller.model import LABEL_MEMBER, ClusterSpec
from tests.integration.chart.kit import ROOT, agent_values, only, render

ALERT_TESTS = Path(__file__).with_name("alerts_test.yaml")
METRICS_DOC = ROOT / "docs" / "metrics.md"
MONITORING = {
    "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
    "serviceMonitor": {"enabled": True},
    "grafanaDashboard": {"enabled": True},
}


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary is not None, (
        "promtool is not installed: scripts/bootstrap installs the Debian package prometheus, "
        "which ships it (apt-get install prometheus)"
    )
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def rendered_rules(tmp_path: Path, values: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    """The rendered PrometheusRule and its rule groups written as a Prometheus rule file."""
    rule = only(render(tmp_path, values), "PrometheusRule")
    path = tmp_path / "rules" / "rendered-alerts.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(rule["spec"], sort_keys=False), encoding="utf-8")
    return rule, path


def alert_names(spec: dict[str, Any]) -> set[str]:
    return {r["alert"] for group in spec["groups"] for r in group["rules"] if "alert" in r}


def test_the_rules_render_when_asked_and_pass_promtool_check_rules(tmp_path: Path) -> None:
    # Off by default: the PrometheusRule and ServiceMonitor need the operator's CRDs.
    default = render(tmp_path, agent_values())
    assert not {o["kind"] for o in default} & {"PrometheusRule", "ServiceMonitor"}
    assert [o["metadata"]["name"] for o in default if o["kind"] == "ConfigMap"] == ["syncer"]
    rule, path = rendered_rules(tmp_path, agent_values(**MONITORING))
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    checked = promtool("check", "rules", str(path), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in rule['spec']['groups'])} rules found" in checked.stdout


def test_the_apply_error_alert_is_the_design_s(tmp_path: Path) -> None:
    rule, _ = rendered_rules(tmp_path, agent_values(**MONITORING))
    rules = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    apply_errors = rules["SyncerApplyErrors"]
    assert re.fullmatch(
        r"sum by \(cluster\) \(rate\(syncer_apply_errors_total\[5m\]\)\) > 0\.1", apply_errors["expr"]
    )
    assert apply_errors["for"] == "3m"


def test_every_alert_fires_and_stays_quiet_in_promtool_test_rules(tmp_path: Path) -> None:
    rule, path = rendered_rules(tmp_path, agent_values(**MONITORING))
    tests = yaml.safe_load(ALERT_TESTS.read_text(encoding="utf-8"))
    assert tests["rule_files"] == [path.name]
    cases = [case for test in tests["tests"] for case in test["alert_rule_test"]]
    firing = {case["alertname"] for case in cases if case.get("exp_alerts")}
    quiet = {case["alertname"] for case in cases if not case.get("exp_alerts")}
    shipped = alert_names(rule["spec"])
    assert shipped - firing == set(), "alerts never tested firing"
    assert shipped - quiet == set(), "alerts never tested quiet"
    shutil.copy(ALERT_TESTS, path.parent / ALERT_TESTS.name)
    tested = promtool("test", "rules", ALERT_TESTS.name, cwd=path.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_alerts_docs_metrics_md_lists_are_shipped(tmp_path: Path) -> None:
    rule, _ = rendered_rules(tmp_path, agent_values(**MONITORING))
    documented = set(
        re.findall(r"^\| `(\w+)` \|", METRICS_DOC.read_text(encoding="utf-8").split("## Alerts")[1], re.M)
    )
    assert documented == alert_names(rule["spec"])


def _exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", ())]


def test_the_dashboard_is_a_labelled_configmap_whose_queries_parse_and_use_documented_metrics(
    tmp_path: Path,
) -> None:
    objects = render(tmp_path, agent_values(**MONITORING))
    config = only(objects, "ConfigMap", "syncer-dashboard")
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(config["data"]["syncer.json"])
    exprs = _exprs(dashboard)
    assert exprs
    # Each query as a recording rule: promtool parses it as Prometheus would.
    recording = {"groups": [{"name": "dashboard", "rules": []}]}
    for n, expr in enumerate(exprs):
        rule = {"record": f"dashboard:query_{n}", "expr": expr.replace("$__rate_interval", "5m")}
        recording["groups"][0]["rules"].append(rule)
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(recording), encoding="utf-8")
    checked = promtool("check", "rules", str(path), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    doc = METRICS_DOC.read_text(encoding="utf-8")
    used = {m for expr in exprs for m in re.findall(r"\b((?:syncer|rediscluster|redis)_[a-z_]+)\b", expr)}
    documented = {re.sub(r"_(total|bucket|count|sum)$", "", m) for m in used}
    missing = sorted(m for m in documented if f"`{m}" not in doc)
    assert missing == [], f"metrics the dashboard uses that docs/metrics.md does not list: {missing}"


def test_the_service_monitor_scrapes_agent_and_controller_mode_alike(tmp_path: Path) -> None:
    for values in (agent_values(**MONITORING), {"mode": "controller", **MONITORING}):
        objects = render(tmp_path, values)
        monitor = only(objects, "ServiceMonitor")
        assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
        container = only(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        port = next(p["containerPort"] for p in container["ports"] if p["name"] == "http")
        metrics_port = [a for a in container["args"] if a.startswith(("--http-port=", "--metrics-port="))]
        assert metrics_port == [f"{metrics_port[0].split('=')[0]}={port}"]


def test_the_redis_exporters_service_monitor_scrapes_every_pod_through_the_headless_service(
    tmp_path: Path,
) -> None:
    spec = ClusterSpec(name="cache", namespace="redis", uid="u-1", generation=1, version="7.2", exporter=True)
    values = agent_values(serviceMonitor={"redisExporters": True})
    monitor = only(render(tmp_path, values), "ServiceMonitor", "syncer-redis")
    wanted = monitor["spec"]["selector"]["matchLabels"]
    [endpoint] = monitor["spec"]["endpoints"]
    # The port is on the Service that selects every pod (a pod held out of the client Service,
    # whose node is not a member, is scraped too), and on that one only: one target per pod.
    headless, client = headless_service(spec), client_service(spec, members_only=True)
    for service in (headless, client):
        assert wanted.items() <= service["metadata"]["labels"].items()
    assert endpoint["port"] in {p["name"] for p in headless["spec"]["ports"]}
    assert endpoint["port"] not in {p["name"] for p in client["spec"]["ports"]}
    assert "selector" in headless["spec"]
    assert LABEL_MEMBER not in headless["spec"]["selector"]
    # The target is labelled with its RedisCluster, read from the Service's instance label.
    [relabel] = endpoint["relabelings"]
    assert relabel["targetLabel"] == "rediscluster"
    [source] = relabel["sourceLabels"]
    label = next(k for k, v in headless["metadata"]["labels"].items() if v == spec.name)
    assert source == "__meta_kubernetes_service_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    watching = agent_values(serviceMonitor={"redisExporters": True}, controller={"watchNamespace": "redis"})
    monitor = only(render(tmp_path, watching), "ServiceMonitor", "syncer-redis")
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["redis"]}
    # No controller here, no RedisCluster to scrape.
    without = agent_values(serviceMonitor={"redisExporters": True}, controller={"enabled": False})
    assert not [o for o in render(tmp_path, without) if o["kind"] == "ServiceMonitor"]


def test_both_service_monitors_label_every_target_with_the_cluster_s_name_in_the_fleet(
    tmp_path: Path,
) -> None:
    values = agent_values(serviceMonitor={"enabled": True, "redisExporters": True, "cluster": "eu-1"})
    objects = render(tmp_path, values)
    for name in ("syncer", "syncer-redis"):
        [endpoint] = only(objects, "ServiceMonitor", name)["spec"]["endpoints"]
        labelled = [r for r in endpoint["relabelings"] if r["targetLabel"] == "cluster"]
        assert labelled == [{"targetLabel": "cluster", "replacement": "eu-1", "action": "replace"}], name
    unnamed = render(tmp_path, agent_values(serviceMonitor={"enabled": True, "redisExporters": True}))
    for name in ("syncer", "syncer-redis"):
        [endpoint] = only(unnamed, "ServiceMonitor", name)["spec"]["endpoints"]
        assert "cluster" not in {r["targetLabel"] for r in endpoint.get("relabelings", [])}, name
