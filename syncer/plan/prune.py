"""What a sync would prune, and what it keeps, with the rules of ``syncer.domain.rules``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from syncer.domain.applied import MANAGED_BY_LABEL, MANAGED_BY_VALUE, Inventory, InventorySource
from syncer.domain.objects import Manifest, ObjectKey
from syncer.domain.plans import Action, Change
from syncer.domain.rules import NO_INVENTORY, SyncRules, prune_refusal
from syncer.domain.secrets import SensitiveFields, masked_document
from syncer.plan.fields import normalized


def _labelled(live: Mapping[str, Any]) -> bool:
    return ((live.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE


def _change(
    key: ObjectKey, live: Mapping[str, Any], action: Action, message: str, sensitive: SensitiveFields
) -> Change:
    return Change(
        key,
        str(live.get("apiVersion", "")),
        action,
        message=message,
        before=masked_document(normalized(live), sensitive) if action is Action.PRUNE else None,
    )


def prune_changes(
    desired: Sequence[Manifest],
    live: Mapping[ObjectKey, Mapping[str, Any]],
    inventory: Inventory,
    rules: SyncRules,
    sensitive: SensitiveFields = SensitiveFields(),
) -> list[Change]:
    """A prune for every inventoried, live, undesired object that carries proof syncer applied it; a
    keep (with the reason) for every other one, and for every labelled undesired object of a cluster
    without a recorded inventory (nothing is pruned there)."""
    wanted = {m.key for m in desired}
    found: list[Change] = []
    if inventory.source is InventorySource.MISSING:
        for key in sorted(k for k, obj in live.items() if k not in wanted and _labelled(obj)):
            found.append(_change(key, live[key], Action.KEEP, NO_INVENTORY, sensitive))
        return found
    for key in sorted(inventory.keys - wanted):
        obj = live.get(key)
        if obj is None:
            continue
        reason = prune_refusal(obj, rules)
        if reason:
            found.append(_change(key, obj, Action.KEEP, reason, sensitive))
            continue
        message = "no longer desired"
        if inventory.source is InventorySource.REBUILT:
            message += " (inventory rebuilt from labels; syncer's managedFields show it applied this)"
        found.append(_change(key, obj, Action.PRUNE, message, sensitive))
    return found
