"""Pure value types shared by every stage: object keys, manifests, desired fleets, plans, change sets,
sync states and the history of revisions each cluster keeps, pass events and durations.

Owns: frozen dataclasses and string enums, and the body syncer applies for a manifest (its managed-by
label and applied-fields annotation). Must not: import anything that does I/O or any other syncer
package but syncer.errors.

Names are imported when first used (``syncer.lazy``), so that ``syncer.domain.objects`` can be imported
without the rest of the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncer.lazy import lazy_getattr

if TYPE_CHECKING:
    from syncer.domain.applied import (
        APPLIED_FIELDS_ANNOTATION,
        MANAGED_BY_LABEL,
        MANAGED_BY_SELECTOR,
        MANAGED_BY_VALUE,
        FieldPath,
        Inventory,
        applied_body,
    )
    from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey, api_group
    from syncer.domain.plans import Action, Change, ClusterPlan, FieldChange, FleetPlan, WavePlan
    from syncer.domain.selectors import LabelSelector

__getattr__ = lazy_getattr(
    __name__,
    {
        "applied": (
            "APPLIED_FIELDS_ANNOTATION",
            "MANAGED_BY_LABEL",
            "MANAGED_BY_SELECTOR",
            "MANAGED_BY_VALUE",
            "FieldPath",
            "Inventory",
            "applied_body",
        ),
        "objects": ("ClusterManifests", "DesiredFleet", "Manifest", "ObjectKey", "api_group"),
        "plans": ("Action", "Change", "ClusterPlan", "FieldChange", "FleetPlan", "WavePlan"),
        "selectors": ("LabelSelector",),
    },
)

__all__ = [
    "APPLIED_FIELDS_ANNOTATION",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_SELECTOR",
    "MANAGED_BY_VALUE",
    "Action",
    "Change",
    "ClusterManifests",
    "ClusterPlan",
    "DesiredFleet",
    "FieldChange",
    "FieldPath",
    "FleetPlan",
    "Inventory",
    "LabelSelector",
    "Manifest",
    "ObjectKey",
    "WavePlan",
    "api_group",
    "applied_body",
]
