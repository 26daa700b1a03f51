"""Each cluster's history of revisions, kept under its own key of the sync-state ConfigMap.

The agent writes it in the same write as the state (``StateStore.save``: the same fence, the same
field manager), so it survives restarts and the loss of any cache; ``syncer history`` and
``syncer rollback`` read it from the clusters. Reading is strict: a record that is not this
version's says what is wrong and where (``RecordUnreadable``); the agent's own next write starts the
record again rather than stop a rollout for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from syncer.domain.revision_history import HistoryEntry, Outcome
from syncer.errors import RecordUnreadable

HISTORY_KEY = "history.json"
HISTORY_VERSION = 1
_TEXTS = ("revision", "signer", "wave", "reason", "by")
_NUMBERS = ("started", "ended")


def encode_history(entries: tuple[HistoryEntry, ...]) -> str:
    """The record as kept under ``HISTORY_KEY``: a version and the entries, oldest first."""
    rows = [{**{k: getattr(e, k) for k in (*_TEXTS, *_NUMBERS)}, "outcome": str(e.outcome)} for e in entries]
    document = {"version": HISTORY_VERSION, "entries": rows}
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _entry(raw: Any, index: int) -> HistoryEntry:
    if not isinstance(raw, dict):
        raise ValueError(f"entry {index} is not an object")
    values: dict[str, Any] = {}
    for key in _TEXTS:
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise ValueError(f"entry {index}: {key} must be a string")
        values[key] = value
    for key in _NUMBERS:
        value = raw.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"entry {index}: {key} must be a number")
        values[key] = float(value)
    try:
        outcome = Outcome(raw.get("outcome", ""))
    except ValueError:
        known = ", ".join(o.value for o in Outcome)
        raise ValueError(f"entry {index}: outcome {raw.get('outcome')!r} is not one of {known}") from None
    if not values["revision"]:
        raise ValueError(f"entry {index}: revision is empty")
    return HistoryEntry(outcome=outcome, **values).bounded()


def decode_history(text: str) -> tuple[HistoryEntry, ...]:
    """The entries in ``text``; ValueError says what is wrong with it."""
    try:
        document = json.loads(text)
    except ValueError as err:
        raise ValueError(f"not JSON: {err}") from None
    if not isinstance(document, dict) or document.get("version") != HISTORY_VERSION:
        raise ValueError(f"unknown format (expected version {HISTORY_VERSION})")
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise ValueError("entries must be a list")
    return tuple(_entry(raw, index) for index, raw in enumerate(entries, 1))


def history_of(configmap: Mapping[str, Any], cluster: str) -> tuple[HistoryEntry, ...]:
    """The history a sync-state ConfigMap keeps (none when it keeps none); RecordUnreadable names the
    cluster, the ConfigMap and the key when it cannot be read."""
    text = (configmap.get("data") or {}).get(HISTORY_KEY, "")
    if not text:
        return ()
    try:
        return decode_history(text)
    except ValueError as err:
        meta = configmap.get("metadata") or {}
        where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        raise RecordUnreadable(f"{cluster}: ConfigMap {where}, key {HISTORY_KEY}: {err}") from None
