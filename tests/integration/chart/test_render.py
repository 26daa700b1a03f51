"""The chart under the real helm binary: lint, schema, rendering, the CRD it ships, its RBAC table."""

from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from syncer.cli.agent_cmds import run as run_command
from syncer.cli.controller import controller as controller_command
from syncer.config.agent import load_agent_config
from syncer.config.rollout import load_rollout_policy
from syncer.crds import REDISCLUSTER_CRD, crd_path
from tests.integration.chart.kit import (
    CHART,
    GIT_URL,
    agent_values,
    helm,
    only,
    readme_rules,
    render,
    rendered_rules,
)

pytestmark = pytest.mark.integration

NON_DEFAULT: dict[str, Any] = {
    "mode": "controller",
    "replicaCount": 3,
    "controller": {"watchNamespace": "redis", "workers": 4, "topology": True},
    "centralAgent": {"enabled": True, "subjects": [{"kind": "User", "name": "fleet-agent"}]},
    "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
    "agent": {"stateNamespace": "syncer-state"},
}
FULL_AGENT: dict[str, Any] = agent_values(
    git={
        "url": "ssh://git@git.example.org/platform/redis-fleet.git",
        "branch": "release",
        "interval": "30s",
        "timeoutSeconds": 90,
        "credentials": {
            "existingSecret": "fleet-git",
            "sshKeyKey": "identity",
            "knownHostsKey": "known_hosts",
        },
    },
    webhook={"existingSecret": "fleet-hook", "key": "token"},
    clusters={
        "kubeconfigSecret": "fleet-kubeconfigs",
        "targets": {"eu-1": {"context": "prod-eu-1"}, "home": {"inCluster": True}},
    },
    trustPolicy={"mode": "strict"},
)


def _lint_clean(result_stdout: str) -> None:
    assert "0 chart(s) failed" in result_stdout, result_stdout
    assert "[WARNING]" not in result_stdout, result_stdout
    assert "[ERROR]" not in result_stdout, result_stdout


MONITORED = agent_values(
    prometheusRule={"enabled": True}, serviceMonitor={"enabled": True}, grafanaDashboard={"enabled": True}
)


NOTIFIED = agent_values(
    notifications={
        "existingSecret": "fleet-notify",
        "config": {
            "receivers": [{"name": "chat", "type": "slack", "urlFile": "../notify/slack-url"}],
            "routes": [{"receivers": ["chat"]}],
        },
    }
)


@pytest.mark.parametrize(
    "values", [None, agent_values(), NON_DEFAULT, FULL_AGENT, MONITORED, NOTIFIED], ids=repr
)
def test_helm_lint_is_clean_even_strict(tmp_path: Path, values: dict[str, Any] | None) -> None:
    for flags in ([], ["--strict"]):
        result = helm("lint", *flags, str(CHART), values=values, workdir=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        _lint_clean(result.stdout)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"replicaCount": "two"}, "replicaCount"),
        ({"mode": "both"}, "mode"),
        ({"controller": {"watchNamespace": "Not_A_Namespace"}}, "watchNamespace"),
        ({"securityContext": {"allowPrivilegeEscalation": True}}, "allowPrivilegeEscalation"),
        ({"git": {"url": GIT_URL, "interval": "soon"}}, "interval"),
        ({"replicas": 2}, "replicas"),
        ({"git": {"url": GIT_URL}, "tracing": {"endpoint": "otel:4318"}}, "tracing/endpoint"),
        ({"git": {"url": GIT_URL}, "tracing": {"sampler": "sometimes"}}, "tracing/sampler"),
        ({"git": {"url": GIT_URL}, "tracing": {"urlTemplate": "https://j/trace/"}}, "tracing/urlTemplate"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_the_schema_rejects_bad_values_naming_them(
    tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    for command in ("lint", "template"):
        args = [command, str(CHART)] if command == "lint" else [command, "syncer", str(CHART)]
        result = helm(*args, values=values, workdir=tmp_path)
        assert result.returncode != 0, f"{command} accepted {values}"
        output = result.stdout + result.stderr
        assert "values don't meet the specifications of the schema" in output, output
        assert message in output, output


def test_replicas_as_a_word_gets_a_clear_message(tmp_path: Path) -> None:
    result = helm("template", "syncer", str(CHART), values={"replicaCount": "two"}, workdir=tmp_path)
    assert result.returncode != 0
    assert "replicaCount" in result.stderr, result.stderr
    assert "integer" in result.stderr, result.stderr


def test_agent_mode_without_a_git_url_fails_with_the_reason(tmp_path: Path) -> None:
    result = helm("template", "syncer", str(CHART), workdir=tmp_path)
    assert result.returncode != 0
    assert "git.url is required in agent mode" in result.stderr, result.stderr
    assert (
        helm("template", "syncer", str(CHART), values={"mode": "controller"}, workdir=tmp_path).returncode
        == 0
    )


def test_the_shipped_crd_is_the_file_syncer_validates_with(tmp_path: Path) -> None:
    expected = crd_path().read_bytes()
    link = CHART / "crds" / REDISCLUSTER_CRD
    assert link.is_symlink(), "chart/crds must link to the one CRD file, not hold a copy"
    assert link.resolve() == (CHART.parent / "syncer" / "crds" / REDISCLUSTER_CRD).resolve()
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == [REDISCLUSTER_CRD]
    # What helm renders from the chart directory ...
    result = helm("template", "syncer", str(CHART), "--include-crds", values=agent_values(), workdir=tmp_path)
    assert result.returncode == 0, result.stderr
    marker = f"# Source: syncer/crds/{REDISCLUSTER_CRD}\n"
    assert marker in result.stdout
    assert result.stdout.split(marker, 1)[1].startswith(expected.decode())
    # ... and what it packages are byte for byte the file syncer loads.
    out = tmp_path / "package"
    packaged = helm("package", str(CHART), "--destination", str(out), workdir=tmp_path)
    assert packaged.returncode == 0, packaged.stderr
    (archive,) = out.glob("syncer-*.tgz")
    with tarfile.open(archive) as tar:
        member = tar.extractfile(f"syncer/crds/{REDISCLUSTER_CRD}")
        assert member is not None
        assert member.read() == expected
        names = tar.getnames()
    assert "syncer/values.schema.json" in names
    assert "syncer/README.md" in names


def test_the_readme_rbac_table_is_what_the_chart_renders(tmp_path: Path) -> None:
    agent = render(tmp_path, agent_values(controller={"topology": True}), release="syncer")
    controller = render(
        tmp_path,
        {
            "mode": "controller",
            "centralAgent": {"enabled": True, "subjects": [{"kind": "User", "name": "a"}]},
        },
        release="syncer",
    )
    rendered = rendered_rules(agent, "syncer")
    for key, verbs in rendered_rules(controller, "syncer").items():
        assert rendered.setdefault(key, verbs) == verbs, key
    documented = readme_rules()
    assert set(documented) == set(rendered), (
        f"in the README only: {sorted(set(documented) - set(rendered))}; "
        f"rendered only: {sorted(set(rendered) - set(documented))}"
    )
    for key, verbs in rendered.items():
        assert documented[key] == verbs, f"{key}: README {sorted(documented[key])}, chart {sorted(verbs)}"
    # Pods are listed only when the controller asks Redis about the topology, and then patched: the
    # controller labels the pods whose node is in the Redis cluster (the client Service selects them).
    assert set(rendered[("controller", "", "pods", "")]) == {"list", "patch"}
    plain = rendered_rules(render(tmp_path, agent_values()), "syncer")
    assert ("controller", "", "pods", "") not in plain
    assert set(plain) == set(rendered) - {("controller", "", "pods", "")} - {
        k for k in rendered if k[0].startswith("central-agent")
    }


@pytest.mark.parametrize(
    "values", [agent_values(), NON_DEFAULT, FULL_AGENT], ids=["default", "controller", "full"]
)
def test_no_rule_uses_wildcards_or_grants_escalation(tmp_path: Path, values: dict[str, Any]) -> None:
    objects = render(tmp_path, values)
    roles = [o for o in objects if o["kind"] in ("Role", "ClusterRole")]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            flat = [*rule.get("apiGroups", []), *rule["resources"], *rule["verbs"]]
            assert not any("*" in x for x in flat), role["metadata"]["name"]
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])
            assert "nonResourceURLs" not in rule


def test_the_watch_namespace_turns_the_controller_rules_into_a_role_there(tmp_path: Path) -> None:
    objects = render(tmp_path, agent_values(controller={"watchNamespace": "redis"}))
    role = only(objects, "Role", "syncer-controller")
    assert role["metadata"]["namespace"] == "redis"
    binding = only(objects, "RoleBinding", "syncer-controller")
    assert binding["metadata"]["namespace"] == "redis"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "syncer", "namespace": "syncer-system"}]
    assert not [
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("-controller")
    ]
    assert (
        "--watch-namespace=redis"
        in only(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    )


def _ssh_public_key(folder: Path) -> str:
    key = folder / "ops"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ops", "-f", str(key)], check=True)
    return key.with_suffix(".pub").read_text(encoding="utf-8").strip()


def test_the_rendered_agent_files_load_with_syncer_itself(tmp_path: Path) -> None:
    signer = {"name": "ops", "ssh": _ssh_public_key(tmp_path), "paths": ["clusters/**"]}
    values = {**FULL_AGENT, "trustPolicy": {"mode": "strict", "signers": [signer]}}
    objects = render(tmp_path, values)
    data = only(objects, "ConfigMap")["data"]
    folder = tmp_path / "etc"
    folder.mkdir()
    for name, text in data.items():
        (folder / name).write_text(text, encoding="utf-8")
    config = load_agent_config(folder / "config.yaml")
    assert config.source.url == "ssh://git@git.example.org/platform/redis-fleet.git"
    assert config.source.branch == "release"
    assert config.source.timeout == 90
    assert config.source.credentials.ssh_key_file == Path("/etc/syncer/git/identity")
    assert config.source.credentials.known_hosts_file == Path("/etc/syncer/git/known_hosts")
    assert config.source.credentials.token_file is None
    assert config.trust.mode == "strict"
    assert [s.name for s in config.trust.signers] == ["ops"]
    assert config.clusters["eu-1"].context == "prod-eu-1"
    assert config.clusters["eu-1"].kubeconfig == Path("/etc/syncer/clusters/kubeconfig")
    assert config.clusters["home"].kubeconfig == Path("/etc/syncer/config/in-cluster.kubeconfig")
    in_cluster = yaml.safe_load(data["in-cluster.kubeconfig"])
    assert in_cluster["current-context"] == config.clusters["home"].context == "in-cluster"
    rollout = load_rollout_policy(folder / "rollout.yaml")
    assert [w.name for w in rollout.waves] == ["canary", "early", "half", "rest"]
    # Every file the config names is mounted where it says.
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {
        "git-credentials": "fleet-git",
        "clusters": "fleet-kubeconfigs",
        "webhook": "fleet-hook",
        "admission-tls": "syncer-admission-tls",
    }
    assert mounts["admission-tls"] == "/etc/syncer/admission"
    assert "--admission-cert-dir=/etc/syncer/admission" in pod["containers"][0]["args"]
    assert mounts["git-credentials"] == "/etc/syncer/git"
    assert mounts["clusters"] == "/etc/syncer/clusters"
    assert mounts["config"] == "/etc/syncer/config"
    assert "--hook-secret-file=/etc/syncer/webhook/token" in pod["containers"][0]["args"]


def test_notifications_reach_the_agent_config_with_their_secrets_mounted_beside_it(tmp_path: Path) -> None:
    """The chart's notifications section is the agent config's as it is; the receivers name their
    secrets relative to the config file, and the Secret is mounted where those names point."""
    notify = {
        "receivers": [
            {"name": "ops", "type": "webhook", "url": "https://hooks.example.org/syncer",
             "secretFile": "../notify/hmac-key"},
            {"name": "chat", "type": "slack", "urlFile": "../notify/slack-url"},
        ],
        "routes": [{"receivers": ["ops"]}, {"receivers": ["chat"], "minSeverity": "warning"}],
    }  # fmt: skip
    values = {**FULL_AGENT, "notifications": {"existingSecret": "fleet-notify", "config": notify}}
    objects = render(tmp_path, values)
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    mounts = {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}
    secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    assert secrets["notify"] == {"secretName": "fleet-notify", "defaultMode": 0o400}
    assert (mounts["notify"]["mountPath"], mounts["notify"]["readOnly"]) == ("/etc/syncer/notify", True)
    assert mounts["config"]["mountPath"] == "/etc/syncer/config"

    # The pod's /etc/syncer laid out here: the ConfigMap's files and the Secret's keys.
    etc = tmp_path / "etc"
    (etc / "config").mkdir(parents=True)
    (etc / "notify").mkdir()
    for name, text in only(objects, "ConfigMap")["data"].items():
        (etc / "config" / name).write_text(text, encoding="utf-8")
    (etc / "notify" / "hmac-key").write_text("k3y\n", encoding="utf-8")
    (etc / "notify" / "slack-url").write_text("https://hooks.slack.example/T0/B0/x\n", encoding="utf-8")
    config = load_agent_config(etc / "config" / "config.yaml")
    receivers = config.notifications.receivers
    assert sorted(receivers) == ["chat", "ops"]
    assert receivers["ops"].url == "https://hooks.example.org/syncer"
    assert receivers["ops"].secret.reveal() == "k3y"
    assert receivers["chat"].secret.reveal() == "https://hooks.slack.example/T0/B0/x"
    assert [list(r.receivers) for r in config.notifications.routes] == [["ops"], ["chat"]]


def _env(objects: list[dict[str, Any]]) -> dict[str, str]:
    container = only(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


@pytest.mark.parametrize("mode", ["agent", "controller"])
def test_tracing_values_are_the_standard_otel_variables_of_the_pod(tmp_path: Path, mode: str) -> None:
    tracing = {
        "endpoint": "http://otel-collector.observability:4318",
        "serviceName": "fleet-syncer",
        "sampler": "parentbased_traceidratio",
        "samplerArg": "0.1",
        "urlTemplate": "https://jaeger.example.org/trace/{traceId}",
    }
    objects = render(tmp_path, agent_values(mode=mode, tracing=tracing))
    otel = {k: v for k, v in _env(objects).items() if k.startswith("OTEL_")}
    assert otel == {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4318",
        "OTEL_SERVICE_NAME": "fleet-syncer",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.1",
    }
    if mode == "agent":  # the trace link is the agent config's, and syncer loads it
        etc = tmp_path / "etc"
        etc.mkdir()
        for name, text in only(objects, "ConfigMap")["data"].items():
            (etc / name).write_text(text, encoding="utf-8")
        links = load_agent_config(etc / "config.yaml").tracing
        assert links.url("0" * 32) == f"https://jaeger.example.org/trace/{'0' * 32}"


def test_without_a_tracing_endpoint_the_pod_has_no_otel_variable(tmp_path: Path) -> None:
    objects = render(tmp_path, agent_values(tracing={"serviceName": "fleet-syncer"}))
    assert [k for k in _env(objects) if k.startswith("OTEL_")] == []
    assert "tracing" not in yaml.safe_load(only(objects, "ConfigMap")["data"]["config.yaml"])


def test_without_notifications_nothing_is_told_and_no_secret_is_mounted(tmp_path: Path) -> None:
    objects = render(tmp_path, agent_values())
    assert "notifications" not in yaml.safe_load(only(objects, "ConfigMap")["data"]["config.yaml"])
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    assert "notify" not in {v["name"] for v in pod["volumes"]}


def test_a_target_without_a_kubeconfig_secret_is_refused(tmp_path: Path) -> None:
    values = agent_values(clusters={"targets": {"eu-1": {"context": "eu-1"}}})
    result = helm("template", "syncer", str(CHART), values=values, workdir=tmp_path)
    assert result.returncode != 0
    assert "clusters.targets.eu-1 needs clusters.kubeconfigSecret" in result.stderr


def test_controller_mode_arguments_are_those_syncer_controller_accepts(tmp_path: Path) -> None:
    objects = render(tmp_path, NON_DEFAULT)
    container = only(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["syncer"]
    assert container["args"][0] == "controller"
    args = [a.replace("$(POD_NAMESPACE)", "syncer-system") for a in container["args"][1:]]
    context = controller_command.make_context("controller", args)
    assert context.params["context"] == "in-cluster"
    assert context.params["watch_namespace"] == "redis"
    assert context.params["lease_namespace"] == "syncer-system"
    assert context.params["metrics_port"] == 8080
    assert context.params["workers"] == 4
    assert context.params["topology"] is True
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["KUBECONFIG"] == "/etc/syncer/config/in-cluster.kubeconfig"
    with pytest.raises(click.UsageError):
        controller_command.make_context("controller", [*args, "--no-such-flag"])


def test_agent_mode_arguments_are_those_syncer_run_accepts_and_bind_the_pod_addresses(
    tmp_path: Path,
) -> None:
    values = {**FULL_AGENT, "service": {"port": 9090}}
    container = only(render(tmp_path, values), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][0] == "run"
    # The mounted files exist only in the pod: any existing file stands in for them here.
    stand_in = tmp_path / "mounted.yaml"
    stand_in.write_text("{}\n")
    args = [
        re.sub(r"=/etc/syncer/\S+$", f"={stand_in}", a.replace("$(POD_NAMESPACE)", "syncer-system"))
        for a in container["args"][1:]
    ]
    params = run_command.make_context("run", args).params
    # In the pod the probes and the Service come over the pod's address; outside one the default
    # is loopback.
    assert (params["http_host"], params["http_port"]) == ("0.0.0.0", 9090)
    assert container["ports"][0]["containerPort"] == 9090
    assert run_command.make_context("run", ["--config", str(CHART / "Chart.yaml")]).params["http_host"] == (
        "127.0.0.1"
    )


def test_the_service_and_service_monitor_reach_the_http_port(tmp_path: Path) -> None:
    objects = render(tmp_path, NON_DEFAULT)
    service = only(objects, "Service")
    monitor = only(objects, "ServiceMonitor")
    pod = only(objects, "Deployment")["spec"]["template"]
    assert service["spec"]["selector"] == monitor["spec"]["selector"]["matchLabels"]
    assert all(pod["metadata"]["labels"][k] == v for k, v in service["spec"]["selector"].items())
    assert service["spec"]["ports"][0]["targetPort"] == "http" == monitor["spec"]["endpoints"][0]["port"]
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert not [o for o in render(tmp_path, agent_values()) if o["kind"] == "ServiceMonitor"]


def _pod_args(container: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """The parameters ``syncer run`` takes from the container's arguments (mounted files stood in)."""
    stand_in = tmp_path / "mounted.yaml"
    stand_in.write_text("{}\n")
    args = [
        re.sub(r"=/etc/syncer/\S+$", f"={stand_in}", a.replace("$(POD_NAMESPACE)", "syncer-system"))
        for a in container["args"][1:]
    ]
    return dict(run_command.make_context("run", args).params)


@pytest.mark.parametrize(
    "ports", [{}, {"service": {"port": 9090}, "probes": {"port": 9091}}], ids=["default", "set"]
)
def test_the_agents_probes_point_at_its_probe_listener_not_at_the_webhook_port(
    tmp_path: Path, ports: dict[str, Any]
) -> None:
    container = only(render(tmp_path, {**FULL_AGENT, **ports}), "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    params = _pod_args(container, tmp_path)
    by_name = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        target = container[probe]["httpGet"]
        assert target["path"] == path
        # The probe's port is the one syncer run listens on for probes, and never the webhook's.
        assert by_name[target["port"]] == params["probe_port"] != params["http_port"] == by_name["http"]
    assert params["http_host"] == "0.0.0.0"  # the kubelet comes over the pod's address
    service = only(render(tmp_path, {**FULL_AGENT, **ports}), "Service")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http", "admission"]


def test_a_probe_port_equal_to_the_service_port_is_refused(tmp_path: Path) -> None:
    values = {**FULL_AGENT, "service": {"port": 9090}, "probes": {"port": 9090}}
    result = helm("template", "syncer", str(CHART), values=values, workdir=tmp_path)
    assert result.returncode != 0
    assert "probes.port must differ from service.port" in result.stderr


_DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ({"repository": "registry.example/syncer", "digest": _DIGEST}, f"registry.example/syncer@{_DIGEST}"),
        (
            {"repository": "registry.example/syncer", "tag": "0.1.0", "digest": _DIGEST},
            f"registry.example/syncer:0.1.0@{_DIGEST}",
        ),
        ({"repository": "registry.example/syncer", "tag": "0.1.0"}, "registry.example/syncer:0.1.0"),
    ],
)
def test_the_pod_runs_the_image_by_digest_when_one_is_given(
    tmp_path: Path, image: dict[str, str], expected: str
) -> None:
    objects = render(tmp_path, agent_values(image=image))
    containers = only(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {c["image"] for c in containers if c["name"] == "syncer"} == {expected}


def test_a_digest_that_is_not_sha256_is_refused(tmp_path: Path) -> None:
    values = agent_values(image={"repository": "syncer", "digest": "latest"})
    result = helm("template", "syncer", str(CHART), values=values, workdir=tmp_path)
    assert result.returncode != 0
    assert "/image/digest" in result.stdout + result.stderr, result.stderr
