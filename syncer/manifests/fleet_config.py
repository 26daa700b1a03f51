"""The fleet file (``fleet.yaml``): clusters with their labels, defaults, and shared-manifest selectors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from syncer.bounded.limits import EventBudget
from syncer.bounded.problems import problem
from syncer.bounded.strict_yaml import load_yaml
from syncer.domain.selectors import LabelSelector
from syncer.errors import Location, Problem
from syncer.manifests.options import LoadOptions
from syncer.manifests.problems import ProblemKind
from syncer.manifests.repo_layout import FLEET_FILE, SHARED_DIR, RepoFile, RepoLayout
from syncer.manifests.schema import json_schema_validator, schema_problems

FLEET_API_VERSION = "syncer.dev/v1alpha1"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"

_LABELS = {
    "type": "object",
    "propertyNames": {"pattern": LABEL_KEY, "maxLength": 317},
    "additionalProperties": {"type": "string", "pattern": LABEL_VALUE},
}
_SELECTOR = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "matchLabels": _LABELS,
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "additionalProperties": False,
                "properties": {
                    "key": {"type": "string", "pattern": LABEL_KEY},
                    "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string", "pattern": LABEL_VALUE}},
                },
                "if": {"properties": {"operator": {"enum": ["In", "NotIn"]}}},
                "then": {"required": ["values"], "properties": {"values": {"minItems": 1}}},
                "else": {"not": {"required": ["values"]}},
            },
        },
    },
}
FLEET_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "clusters"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": FLEET_API_VERSION},
        "kind": {"const": "Fleet"},
        "defaults": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"namespace": {"type": "string", "pattern": DNS_LABEL}},
        },
        "clusters": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {"name": {"type": "string", "pattern": DNS_LABEL}, "labels": _LABELS},
            },
        },
        "shared": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path"],
                "additionalProperties": False,
                "properties": {
                    "path": {"type": "string", "pattern": rf"^{SHARED_DIR}(/[^/.][^/]*)+$"},
                    "selector": _SELECTOR,
                },
            },
        },
    },
}


@dataclass(frozen=True)
class FleetCluster:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SharedRule:
    """Which clusters receive the shared manifests at or below ``path`` (a file or directory)."""

    path: str
    selector: LabelSelector
    location: Location

    def covers(self, file_path: str) -> bool:
        return file_path == self.path or file_path.startswith(self.path + "/")


@dataclass(frozen=True)
class FleetConfig:
    clusters: tuple[FleetCluster, ...]
    default_namespace: str = "default"
    shared: tuple[SharedRule, ...] = ()

    def cluster(self, name: str) -> FleetCluster | None:
        return next((c for c in self.clusters if c.name == name), None)

    def receives(self, cluster: FleetCluster, shared_file: str) -> bool:
        """Whether a shared file applies to a cluster: the most specific rule decides, none means all."""
        rules = [rule for rule in self.shared if rule.covers(shared_file)]
        if not rules:
            return True
        return max(rules, key=lambda rule: len(rule.path)).selector.matches(cluster.labels)


def _shared_file_exists(path: str, layout: RepoLayout) -> bool:
    return any(f.path == path or f.path.startswith(path + "/") for f in layout.shared)


def parse_fleet(
    file: RepoFile | None, layout: RepoLayout, options: LoadOptions, budget: EventBudget | None = None
) -> tuple[FleetConfig | None, list[Problem]]:
    """The fleet configuration, or None with the problems that make it unusable."""
    if file is None:
        return None, []
    loaded = load_yaml(file.text, file.path, options, budget)
    problems = list(loaded.problems)
    documents = [d for d in loaded.documents if d.data is not None]
    if problems:
        return None, problems
    if len(documents) != 1:
        return None, [
            problem(ProblemKind.FLEET, "fleet.yaml must hold exactly one document", FLEET_FILE, 1, 1)
        ]
    document = documents[0]
    problems = schema_problems(
        json_schema_validator(FLEET_SCHEMA), document.data, document, ProblemKind.FLEET
    )
    if problems:
        return None, problems
    raw = document.data
    seen: set[str] = set()
    for index, entry in enumerate(raw["clusters"]):
        if entry["name"] in seen:
            problems.append(
                Problem(
                    ProblemKind.FLEET,
                    f"cluster {entry['name']!r} is listed twice",
                    document.location(("clusters", index)),
                )
            )
        seen.add(entry["name"])
    rules: list[SharedRule] = []
    for index, entry in enumerate(raw.get("shared", ())):
        where = document.location(("shared", index))
        if any(rule.path == entry["path"] for rule in rules):
            problems.append(
                Problem(ProblemKind.FLEET, f"shared path {entry['path']!r} is listed twice", where)
            )
        elif not _shared_file_exists(entry["path"], layout):
            problems.append(
                Problem(ProblemKind.FLEET, f"shared path {entry['path']!r} holds no manifests", where)
            )
        rules.append(SharedRule(entry["path"], LabelSelector.from_dict(entry.get("selector", {})), where))
    if problems:
        return None, problems
    clusters = tuple(FleetCluster(c["name"], dict(c.get("labels", {}))) for c in raw["clusters"])
    namespace = raw.get("defaults", {}).get("namespace", "default")
    return FleetConfig(clusters, namespace, tuple(rules)), []
