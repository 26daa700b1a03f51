"""The chart as the real helm binary renders it: run helm, parse what it prints, read the README table."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
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
