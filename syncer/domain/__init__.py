"""Pure value types shared by every stage: object keys, manifests, desired fleets, plans, change sets,
sync states, pass events and durations.

Owns: frozen dataclasses and string enums, and the body syncer applies for a manifest (its managed-by
label and applied-fields annotation). Must not: import anything that does I/O or any other syncer
package but syncer.errors.

Names are imported from their modules when first used, so that importing one module of the
package (``syncer.domain.objects``) does not load the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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

_HOME = {
    "APPLIED_FIELDS_ANNOTATION": "syncer.domain.applied",
    "MANAGED_BY_LABEL": "syncer.domain.applied",
    "MANAGED_BY_SELECTOR": "syncer.domain.applied",
    "MANAGED_BY_VALUE": "syncer.domain.applied",
    "FieldPath": "syncer.domain.applied",
    "Inventory": "syncer.domain.applied",
    "applied_body": "syncer.domain.applied",
    "ClusterManifests": "syncer.domain.objects",
    "DesiredFleet": "syncer.domain.objects",
    "Manifest": "syncer.domain.objects",
    "ObjectKey": "syncer.domain.objects",
    "api_group": "syncer.domain.objects",
    "Action": "syncer.domain.plans",
    "Change": "syncer.domain.plans",
    "ClusterPlan": "syncer.domain.plans",
    "FieldChange": "syncer.domain.plans",
    "FleetPlan": "syncer.domain.plans",
    "WavePlan": "syncer.domain.plans",
    "LabelSelector": "syncer.domain.selectors",
}

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


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
