"""The chart as the real helm binary renders it: run helm, parse what it prints, read the README table,
and lay the rendered agent pod out in a folder so that syncer can run as that pod would."""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devfleet.build import ensure_binaries

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "chart"
README = CHART / "README.md"
GIT_URL = "https://git.example.org/platform/redis-fleet.git"
RuleKey = tuple[str, str, str, str]  # role suffix, API group, resource, resource name ("" = any)


@dataclass(frozen=True)
class Helm:
    returncode: int
    stdout: str
    stderr: str


def helm(*args: str, values: Mapping[str, Any] | None = None, workdir: Path) -> Helm:
    """Run the pinned helm binary; ``values`` go in through a values file."""
    argv = [str(ensure_binaries() / "helm"), *args]
    if values is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        path = workdir / f"values-{len(list(workdir.glob('values-*.yaml')))}.yaml"
        path.write_text(yaml.safe_dump(dict(values)), encoding="utf-8")
        argv += ["--values", str(path)]
    env = {**os.environ, "HELM_CACHE_HOME": str(workdir / "helm-cache")}
    env |= {"HELM_CONFIG_HOME": str(workdir / "helm-config"), "HELM_DATA_HOME": str(workdir / "helm-data")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=False)
    return Helm(done.returncode, done.stdout, done.stderr)


def render(
    workdir: Path,
    values: Mapping[str, Any],
    *,
    release: str = "syncer",
    namespace: str = "syncer-system",
    include_crds: bool = False,
) -> list[dict[str, Any]]:
    """The objects ``helm template`` renders (CRDs only with ``include_crds``)."""
    args = ["template", release, str(CHART), "--namespace", namespace]
    if include_crds:
        args.append("--include-crds")
    result = helm(*args, values=values, workdir=workdir)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def agent_values(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"git": {"url": GIT_URL}}
    values.update(overrides)
    return values


def only(objects: Sequence[Mapping[str, Any]], kind: str, name: str = "") -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (not name or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name!r} in {[o['kind'] for o in objects]}"
    return dict(found[0])


def rendered_rules(objects: Sequence[Mapping[str, Any]], fullname: str) -> dict[RuleKey, set[str]]:
    """Every rule of every rendered Role and ClusterRole, keyed like the README table."""
    rules: dict[RuleKey, set[str]] = {}
    for obj in objects:
        if obj["kind"] not in ("Role", "ClusterRole"):
            continue
        suffix = obj["metadata"]["name"].removeprefix(f"{fullname}-")
        for rule in obj["rules"]:
            for group in rule.get("apiGroups", []):
                for resource in rule["resources"]:
                    for name in rule.get("resourceNames") or [""]:
                        key = (suffix, group, resource, name)
                        assert key not in rules, f"{key} appears twice"
                        rules[key] = set(rule["verbs"])
    return rules


_ROW = re.compile(r"^\|(.+)\|\s*$")


def _cell(text: str) -> str:
    return text.strip().strip("`")


def readme_rules() -> dict[RuleKey, set[str]]:
    """The RBAC table of the chart README, between its start and end markers."""
    text = README.read_text(encoding="utf-8")
    table = text.split("<!-- rbac-table:start -->", 1)[1].split("<!-- rbac-table:end -->", 1)[0]
    rows = [line for line in table.strip().splitlines() if _ROW.match(line)][2:]
    rules: dict[RuleKey, set[str]] = {}
    for row in rows:
        cells = list(row.strip().strip("|").split("|"))
        assert len(cells) == 6, f"a table row needs 6 cells: {row}"
        role, group, resource, name, verbs, why = cells
        assert why.strip(), f"a rule without a reason: {row}"
        key = (_cell(role), _cell(group), _cell(resource), _cell(name))
        assert key not in rules, f"{key} listed twice"
        rules[key] = {_cell(v) for v in verbs.split(",")}
    return rules


# -- the agent's pod, laid out in a folder ------------------------------------------------------------

IN_CLUSTER_SERVER = "https://kubernetes.default.svc"
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class LocalPod:
    """The chart's pod as a local process would see it: every volume of the rendered Deployment is a
    folder under ``root`` (the ConfigMap's files written there), the ServiceAccount token and CA are
    where the kubelet would mount them, and the container's args and env point into ``root``."""

    root: Path
    args: list[str]
    env: dict[str, str]

    def flag(self, name: str) -> str:
        """The value of ``--name=value`` in the container's args."""
        found = [a.split("=", 1)[1] for a in self.args if a.startswith(f"--{name}=")]
        assert len(found) == 1, f"--{name} in {self.args}"
        return found[0]


def _rewriter(mounts: Mapping[str, Path], server: str) -> Callable[[str], str]:
    """Rewrites mount paths (whole path components only) and the in-cluster apiserver address."""
    prefixes = sorted(mounts, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(p) for p in prefixes) + r")(?![\w.-])")

    def rewrite(text: str) -> str:
        return pattern.sub(lambda m: str(mounts[m.group(1)]), text).replace(IN_CLUSTER_SERVER, server)

    return rewrite


def local_pod(
    objects: Sequence[Mapping[str, Any]], root: Path, kubeconfig: Path, context: str, namespace: str
) -> LocalPod:
    """Lay out the rendered agent pod under ``root``, with the credentials of ``context`` in ``kubeconfig``
    (a ServiceAccount token) in place of the token the kubelet would project."""
    doc = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    ctx = next(c["context"] for c in doc["contexts"] if c["name"] == context)
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
    account = root / "serviceaccount"
    account.mkdir(parents=True)
    (account / "token").write_text(user["token"], encoding="utf-8")
    (account / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (account / "namespace").write_text(namespace, encoding="utf-8")

    deployment = only(objects, "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts: dict[str, Path] = {SERVICE_ACCOUNT_MOUNT: account}
    for mount in container["volumeMounts"]:
        mounts[mount["mountPath"]] = root / "volumes" / mount["name"]
    rewrite = _rewriter(mounts, cluster["server"])
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        folder = mounts[mount["mountPath"]]
        folder.mkdir(parents=True)
        if "configMap" in volume:
            data = only(objects, "ConfigMap", volume["configMap"]["name"])["data"]
            for name, text in data.items():
                (folder / name).write_text(rewrite(text), encoding="utf-8")
        elif "secret" in volume:
            # Only Secrets the chart renders itself (the admission webhook's certificate).
            secret = only(objects, "Secret", volume["secret"]["secretName"])
            for name, encoded in secret["data"].items():
                (folder / name).write_bytes(base64.b64decode(encoded))
        else:
            assert "emptyDir" in volume, (
                f"volume {mount['name']}: only ConfigMaps, Secrets and emptyDirs here"
            )

    fields = {"metadata.namespace": namespace, "metadata.name": f"{deployment['metadata']['name']}-0"}
    env: dict[str, str] = {}
    for var in container["env"]:
        if "value" in var:
            env[var["name"]] = rewrite(var["value"])
        else:
            env[var["name"]] = fields[var["valueFrom"]["fieldRef"]["fieldPath"]]
    args = [rewrite(re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a)) for a in container["args"]]
    return LocalPod(root, args, env)
