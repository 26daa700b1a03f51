"""From YAML documents to Kubernetes objects: shape, identity, allowed kinds, metadata and schema."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema.protocols import Validator

from syncer.bounded.limits import EventBudget
from syncer.bounded.strict_yaml import YamlDocument, load_yaml
from syncer.domain.objects import api_group
from syncer.errors import Problem
from syncer.manifests.fleet_config import DNS_LABEL, LABEL_KEY, LABEL_VALUE
from syncer.manifests.options import LoadOptions, ResourceKind
from syncer.manifests.problems import ProblemKind
from syncer.manifests.repo_layout import RepoFile
from syncer.manifests.schema import crd_validators, json_schema_validator, schema_problems

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
METADATA_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": DNS_SUBDOMAIN, "maxLength": 253},
        "namespace": {"type": "string", "pattern": DNS_LABEL},
        "labels": {
            "type": "object",
            "propertyNames": {"pattern": LABEL_KEY, "maxLength": 317},
            "additionalProperties": {"type": "string", "pattern": LABEL_VALUE},
        },
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}

Identity = tuple[str, str, str, str]


@functools.cache
def _metadata_validator() -> Validator:
    return json_schema_validator(METADATA_SCHEMA)


@dataclass(frozen=True)
class SourceObject:
    """One object as declared in one document, with its namespace already defaulted."""

    resource: ResourceKind
    namespace: str
    name: str
    body: Mapping[str, Any]
    document: YamlDocument

    @property
    def identity(self) -> Identity:
        return (api_group(self.resource.api_version), self.resource.kind, self.namespace, self.name)

    @property
    def subject(self) -> str:
        kind, namespace, name = self.resource.kind, self.namespace, self.name
        return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def _required_fields(document: YamlDocument) -> list[Problem]:
    data = document.data
    problems: list[Problem] = []
    for field in ("apiVersion", "kind"):
        if field not in data:
            problems.append(Problem(ProblemKind.MISSING_FIELD, f"{field} is missing", document.location()))
        elif not isinstance(data[field], str) or not data[field]:
            message = f"{field} must be a non-empty string"
            problems.append(Problem(ProblemKind.INVALID_FIELD, message, document.location((field,))))
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping):
        kind = ProblemKind.MISSING_FIELD if metadata is None else ProblemKind.INVALID_FIELD
        problems.append(
            Problem(kind, "metadata must be a mapping with a name", document.location(("metadata",)))
        )
    elif "name" not in metadata:
        problems.append(
            Problem(ProblemKind.MISSING_FIELD, "metadata.name is missing", document.location(("metadata",)))
        )
    return problems


def _allowed(document: YamlDocument, options: LoadOptions) -> tuple[ResourceKind | None, list[Problem]]:
    api_version, kind = document.data["apiVersion"], document.data["kind"]
    resource = options.kind_of(api_version, kind)
    if resource is not None:
        return resource, []
    allowed = ", ".join(f"{k.kind} ({k.api_version})" for k in options.allowed_kinds)
    field = "apiVersion" if any(k.kind == kind for k in options.allowed_kinds) else "kind"
    message = f"{kind} ({api_version}) is not allowed in a fleet repository; allowed: {allowed}"
    return None, [Problem(ProblemKind.KIND_NOT_ALLOWED, message, document.location((field,)))]


def _to_object(
    document: YamlDocument, default_namespace: str, options: LoadOptions
) -> tuple[SourceObject | None, list[Problem]]:
    if not isinstance(document.data, Mapping):
        shown = type(document.data).__name__
        return None, [
            Problem(ProblemKind.NOT_AN_OBJECT, f"document is a {shown}, not a mapping", document.location())
        ]
    problems = _required_fields(document)
    if problems:
        return None, problems
    resource, problems = _allowed(document, options)
    if resource is None:
        return None, problems
    metadata = document.data["metadata"]
    problems = schema_problems(
        _metadata_validator(), metadata, document, ProblemKind.INVALID_FIELD, ("metadata",)
    )
    if not resource.namespaced and "namespace" in metadata:
        message = f"{resource.kind} is cluster-scoped and takes no metadata.namespace"
        problems.append(
            Problem(ProblemKind.INVALID_FIELD, message, document.location(("metadata", "namespace")))
        )
    validator = crd_validators().get((resource.api_version, resource.kind))
    if validator is not None:
        problems.extend(schema_problems(validator, document.data, document, ProblemKind.SCHEMA))
    if not isinstance(metadata.get("name"), str) or not isinstance(metadata.get("namespace", ""), str):
        return None, problems
    body = copy.deepcopy(document.data)
    namespace = ""
    if resource.namespaced:
        namespace = metadata.get("namespace") or default_namespace
        body["metadata"]["namespace"] = namespace
    return SourceObject(resource, namespace, metadata["name"], body, document), problems


def load_objects(
    file: RepoFile, default_namespace: str, options: LoadOptions, budget: EventBudget | None = None
) -> tuple[list[SourceObject], list[Problem]]:
    """The objects a manifest file declares, and every problem with them. Empty documents are skipped."""
    loaded = load_yaml(file.text, file.path, options, budget)
    objects: list[SourceObject] = []
    problems = list(loaded.problems)
    for document in loaded.documents:
        if document.data is None:
            continue
        found, found_problems = _to_object(document, default_namespace, options)
        problems.extend(found_problems)
        if found is not None:
            objects.append(found)
    return objects, problems


def revalidate(obj: SourceObject, body: Mapping[str, Any]) -> list[str]:
    """Schema messages for a changed body of ``obj`` (used after overlays), unlocated."""
    messages = [
        p.message
        for p in schema_problems(
            _metadata_validator(),
            body.get("metadata"),
            obj.document,
            ProblemKind.INVALID_FIELD,
            ("metadata",),
        )
    ]
    validator = crd_validators().get((obj.resource.api_version, obj.resource.kind))
    if validator is not None:
        messages.extend(p.message for p in schema_problems(validator, body, obj.document, ProblemKind.SCHEMA))
    return messages
