"""Rendering a revision: every cluster's desired objects from shared manifests, its own and its overlays."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path

from syncer.bounded.limits import EventBudget
from syncer.bounded.problems import problem
from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey
from syncer.errors import Location, ManifestError, Problem
from syncer.manifests.documents import Identity, SourceObject, load_objects
from syncer.manifests.fleet_config import FleetCluster, FleetConfig, parse_fleet
from syncer.manifests.options import LoadOptions
from syncer.manifests.overlays import Overlay, apply_overlays, parse_overlays
from syncer.manifests.problems import ProblemKind, sort_problems
from syncer.manifests.repo_layout import CLUSTERS_DIR, RepoLayout, read_layout


def _collect(
    cluster: FleetCluster,
    fleet: FleetConfig,
    shared: Mapping[str, list[SourceObject]],
    own: list[SourceObject],
) -> tuple[dict[Identity, SourceObject], list[Problem]]:
    chosen = [obj for path, objects in shared.items() if fleet.receives(cluster, path) for obj in objects]
    objects: dict[Identity, SourceObject] = {}
    problems: list[Problem] = []
    for obj in [*chosen, *own]:
        first = objects.get(obj.identity)
        if first is None:
            objects[obj.identity] = obj
            continue
        message = f"{obj.subject} is already declared at {first.document.location()}"
        problems.append(Problem(ProblemKind.DUPLICATE_OBJECT, message, obj.document.location()))
    return objects, problems


def _render_cluster(
    cluster: FleetCluster,
    fleet: FleetConfig,
    *,
    shared: Mapping[str, list[SourceObject]],
    own: list[SourceObject],
    overlays: list[Overlay],
    options: LoadOptions,
) -> tuple[ClusterManifests, list[Problem]]:
    objects, problems = _collect(cluster, fleet, shared, own)
    bodies, overlay_problems = apply_overlays(objects, overlays, options, fleet.default_namespace)
    manifests = [
        Manifest(
            ObjectKey(cluster.name, group, kind, namespace, name),
            objects[(group, kind, namespace, name)].resource.api_version,
            copy.deepcopy(dict(bodies[(group, kind, namespace, name)])),
            objects[(group, kind, namespace, name)].document.location(),
        )
        for group, kind, namespace, name in objects
    ]
    return ClusterManifests.of(cluster.name, manifests, cluster.labels), [*problems, *overlay_problems]


def _unknown_clusters(layout: RepoLayout, fleet: FleetConfig) -> list[Problem]:
    names = sorted(set(layout.clusters) | set(layout.patches))
    return [
        problem(
            ProblemKind.UNKNOWN_CLUSTER,
            f"cluster {name!r} is not listed in fleet.yaml",
            f"{CLUSTERS_DIR}/{name}",
        )
        for name in names
        if fleet.cluster(name) is None
    ]


def load_fleet(root: Path, revision: str, options: LoadOptions | None = None) -> DesiredFleet:
    """The desired objects of every cluster of the fleet repository checked out at ``root``.

    Raises ``ManifestError`` listing every problem of the revision, sorted by file and line, if there
    is any: a revision is taken whole or not at all.
    """
    options = options or LoadOptions()
    if not root.is_dir():
        raise ManifestError(
            [Problem(ProblemKind.LAYOUT, "the repository root is not a directory", Location("."))]
        )
    layout, problems = read_layout(root, options)
    budget = EventBudget(options.max_events)
    fleet, fleet_problems = parse_fleet(layout.fleet, layout, options, budget)
    problems.extend(fleet_problems)
    namespace = fleet.default_namespace if fleet else "default"
    shared: dict[str, list[SourceObject]] = {}
    for file in layout.shared:
        shared[file.path], found = load_objects(file, namespace, options, budget)
        problems.extend(found)
    own: dict[str, list[SourceObject]] = {}
    for name, files in layout.clusters.items():
        own[name] = []
        for file in files:
            objects, found = load_objects(file, namespace, options, budget)
            own[name].extend(objects)
            problems.extend(found)
    overlays: dict[str, list[Overlay]] = {}
    for name, file in layout.patches.items():
        overlays[name], found = parse_overlays(file, options, budget)
        problems.extend(found)
    if fleet is None:
        raise ManifestError(sort_problems(problems))
    problems.extend(_unknown_clusters(layout, fleet))
    clusters: dict[str, ClusterManifests] = {}
    for cluster in sorted(fleet.clusters, key=lambda c: c.name):
        rendered, found = _render_cluster(
            cluster,
            fleet,
            shared=shared,
            own=own.get(cluster.name, []),
            overlays=overlays.get(cluster.name, []),
            options=options,
        )
        clusters[cluster.name] = rendered
        problems.extend(found)
    if problems:
        raise ManifestError(sort_problems(problems))
    return DesiredFleet(revision, clusters)
