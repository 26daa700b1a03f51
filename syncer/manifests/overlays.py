"""Per-cluster overlays: RFC 6902 JSON patches from ``clusters/<name>/patches.yaml``.

Each entry names a target object (kind, name and, for namespaced kinds, a namespace defaulting like
the objects' own) and a list of operations, applied in order with the ``jsonpatch`` library. A patch
may not change the object's identity, and the patched object must still pass its schema; an error
only the patch introduced is reported at the patch entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonpatch

from syncer.bounded.limits import EventBudget
from syncer.bounded.problems import problem
from syncer.bounded.strict_yaml import YamlDocument, load_yaml
from syncer.errors import Problem
from syncer.manifests.documents import Identity, SourceObject, revalidate
from syncer.manifests.options import LoadOptions
from syncer.manifests.problems import ProblemKind
from syncer.manifests.repo_layout import RepoFile
from syncer.manifests.schema import MAX_MESSAGE, json_schema_validator, schema_problems

PATCHES_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "required": ["patches"],
    "additionalProperties": False,
    "properties": {
        "patches": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["target", "ops"],
                "additionalProperties": False,
                "properties": {
                    "target": {
                        "type": "object",
                        "required": ["kind", "name"],
                        "additionalProperties": False,
                        "properties": {
                            "kind": {"type": "string", "minLength": 1},
                            "namespace": {"type": "string", "minLength": 1},
                            "name": {"type": "string", "minLength": 1},
                        },
                    },
                    "ops": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["op", "path"],
                            "properties": {
                                "op": {"type": "string"},
                                "path": {"type": "string"},
                                "from": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Overlay:
    """One ``patches`` entry of a cluster."""

    kind: str
    namespace: str | None
    name: str
    ops: tuple[Mapping[str, Any], ...]
    document: YamlDocument
    index: int

    def target(self, options: LoadOptions, default_namespace: str) -> tuple[str, str, str]:
        """(kind, namespace, name) of the target, the namespace defaulted for namespaced kinds."""
        namespaced = any(k.namespaced for k in options.allowed_kinds if k.kind == self.kind)
        namespace = self.namespace or (default_namespace if namespaced else "")
        return self.kind, namespace, self.name


def parse_overlays(
    file: RepoFile, options: LoadOptions, budget: EventBudget | None = None
) -> tuple[list[Overlay], list[Problem]]:
    """The overlay entries of one patches file, or the problems with it."""
    loaded = load_yaml(file.text, file.path, options, budget)
    documents = [d for d in loaded.documents if d.data is not None]
    if loaded.problems:
        return [], list(loaded.problems)
    if len(documents) != 1:
        return [], [
            problem(ProblemKind.OVERLAY, "a patches file holds exactly one document", file.path, 1, 1)
        ]
    document = documents[0]
    validator = json_schema_validator(PATCHES_SCHEMA)
    problems = schema_problems(validator, document.data, document, ProblemKind.OVERLAY)
    if problems:
        return [], problems
    overlays = [
        Overlay(
            entry["target"]["kind"],
            entry["target"].get("namespace"),
            entry["target"]["name"],
            tuple(entry["ops"]),
            document,
            index,
        )
        for index, entry in enumerate(document.data["patches"])
    ]
    return overlays, []


def _identity_fields(body: Mapping[str, Any]) -> tuple[object, ...]:
    metadata = body.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return body.get("apiVersion"), body.get("kind"), metadata.get("name"), metadata.get("namespace")


def _patched(overlay: Overlay, obj: SourceObject, body: Mapping[str, Any]) -> Mapping[str, Any] | Problem:
    current: Any = body
    for number, op in enumerate(overlay.ops):
        where = overlay.document.location(("patches", overlay.index, "ops", number))
        try:
            current = jsonpatch.JsonPatch([op]).apply(current)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
            detail = re.split(r" in [\[{]", str(e), maxsplit=1)[0][:MAX_MESSAGE]
            return Problem(
                ProblemKind.OVERLAY, f"{op['op']} {op['path']!r} on {obj.subject}: {detail}", where
            )
    if _identity_fields(current) != _identity_fields(body):
        where = overlay.document.location(("patches", overlay.index))
        return Problem(ProblemKind.OVERLAY, f"patch changes the identity of {obj.subject}", where)
    return dict(current)


def apply_overlays(
    objects: Mapping[Identity, SourceObject],
    overlays: list[Overlay],
    options: LoadOptions,
    default_namespace: str,
) -> tuple[dict[Identity, Mapping[str, Any]], list[Problem]]:
    """The bodies of a cluster's objects with its overlays applied in order, and every problem."""
    bodies: dict[Identity, Mapping[str, Any]] = {identity: obj.body for identity, obj in objects.items()}
    by_target = {(ident[1], ident[2], ident[3]): ident for ident in objects}
    problems: list[Problem] = []
    for overlay in overlays:
        kind, namespace, name = overlay.target(options, default_namespace)
        identity = by_target.get((kind, namespace, name))
        if identity is None:
            shown = f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"
            where = overlay.document.location(("patches", overlay.index, "target"))
            problems.append(
                Problem(ProblemKind.OVERLAY_TARGET, f"{shown} is not among this cluster's objects", where)
            )
            continue
        obj = objects[identity]
        result = _patched(overlay, obj, bodies[identity])
        if isinstance(result, Problem):
            problems.append(result)
            continue
        before = set(revalidate(obj, obj.body))
        introduced = [message for message in revalidate(obj, result) if message not in before]
        where = overlay.document.location(("patches", overlay.index))
        problems.extend(
            Problem(ProblemKind.OVERLAY, f"after patching {obj.subject}: {m}", where) for m in introduced
        )
        bodies[identity] = result
    return bodies, problems
