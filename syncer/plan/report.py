"""Field changes as the plan reports them: masked values, owners, the fields a server prediction
changes (compared type-strictly, leaf by leaf), and the object as it would be after the sync."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from syncer.domain.applied import FieldPath, leaf_fields, parse_pointer, pointer
from syncer.domain.plans import Action, FieldChange
from syncer.domain.secrets import SensitiveFields, masked
from syncer.plan.fields import Ownership, normalized, same

if TYPE_CHECKING:
    from syncer.plan.classify import PlanOptions


@dataclass
class FieldList:
    """Collects the field changes of one object, masking secret values on both sides."""

    kind: str
    sensitive: SensitiveFields = field(default_factory=SensitiveFields)
    fields: list[FieldChange] = field(default_factory=list)

    def add(self, path: FieldPath, sides: tuple[Any, Any], owners: tuple[str, ...], action: Action) -> None:
        before, hidden_before = masked(self.kind, path, sides[0], self.sensitive)
        after, hidden_after = masked(self.kind, path, sides[1], self.sensitive)
        self.fields.append(
            FieldChange(pointer(path), before, after, owners, action, hidden_before or hidden_after)
        )

    def done(self) -> tuple[FieldChange, ...]:
        return tuple(sorted(self.fields, key=lambda f: f.path))


def _shadowed(path: FieldPath, value: Any, other: Mapping[FieldPath, Any]) -> bool:
    """An empty map on one side whose keys the other side fills is shown by those keys alone."""
    return value == {} and any(p[: len(path)] == path and len(p) > len(path) for p in other)


def predicted_fields(
    kind: str, live: Mapping[str, Any], predicted: Mapping[str, Any], options: PlanOptions
) -> tuple[FieldChange, ...]:
    """The fields that differ between the live and the predicted object (both without noise)."""
    before, after = leaf_fields(normalized(live)), leaf_fields(normalized(predicted))
    ownership = Ownership(live, options.field_manager)
    out = FieldList(kind, options.sensitive)
    for path in sorted(set(before) | set(after)):
        had, has = path in before, path in after
        if had and has and same(before[path], after[path]):
            continue
        if (had and not has and _shadowed(path, before[path], after)) or (
            has and not had and _shadowed(path, after[path], before)
        ):
            continue
        out.add(
            path,
            (before.get(path), after.get(path)),
            ownership.owners(path, options.field_manager),
            Action.UPDATE,
        )
    return out.done()


def _set(body: dict[str, Any], path: FieldPath, value: Any) -> None:
    node: Any = body
    for part in path[:-1]:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            continue
        if not isinstance(node, dict):
            return
        node = node.setdefault(part, {})
    if isinstance(node, dict):
        if value is None:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(value)


def with_fields(
    before: Mapping[str, Any] | None, desired: Mapping[str, Any], fields: tuple[FieldChange, ...]
) -> dict[str, Any]:
    """The object after the sync as far as it is known locally: the live object with each listed
    field set to the desired value (or removed), or the desired body when nothing is live."""
    if before is None:
        return dict(desired)
    after = copy.deepcopy(dict(before))
    wanted = leaf_fields(desired)
    for change in fields:
        path = parse_pointer(change.path)
        _set(after, path, wanted.get(path) if change.after is not None else None)
    return after
