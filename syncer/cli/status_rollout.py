"""The rollout's status as ``syncer status`` and ``syncer history`` show it: rebuilt from the clusters'
records (``syncer.domain.rollout_records.rebuild``), the same status the agent's page and
``syncer_wave_state`` show."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from syncer.cli.tables import markup_safe
from syncer.domain.rollout_records import ClusterRecord, rebuild, standing
from syncer.domain.rollout_status import RolloutStatus, WaveStatus


def wave_order(policy: Sequence[str], records: Mapping[str, ClusterRecord]) -> list[str]:
    """The waves in the policy's order when the policy names every wave the clusters record (the
    config's rollout policy), else in the order the clusters' histories first name them."""
    recorded = {r.state.wave for r in records.values() if r.state.wave}
    if recorded <= set(policy):
        return [w for w in policy if w in recorded] or list(policy)
    first: dict[str, float] = {}
    for record in records.values():
        for entry in record.history:
            if entry.wave:
                first[entry.wave] = min(first.get(entry.wave, entry.started), entry.started)
    return sorted(recorded, key=lambda w: (first.get(w, float("inf")), w))


def rollout_of(policy: Sequence[str], records: Mapping[str, ClusterRecord]) -> RolloutStatus:
    return rebuild(wave_order(policy, records), records)


def wave_json(wave: WaveStatus) -> dict[str, Any]:
    return {
        "name": wave.name,
        "phase": str(wave.phase),
        "cause": wave.cause,
        "hold": str(wave.hold) if wave.hold else "",
        "back": wave.back,
        "summary": wave.summary,
    }


def rollout_json(status: RolloutStatus) -> dict[str, Any]:
    """The status as ``-o json`` gives it: the revision rolling out and each wave."""
    return {"revision": status.revision, "waves": [wave_json(w) for w in status.waves]}


def standing_json(status: RolloutStatus, record: ClusterRecord) -> dict[str, Any] | None:
    """One cluster on the revision rolling out (None: it is in no wave yet, or nothing rolls out)."""
    if not status.revision or not record.state.wave:
        return None
    found = standing(record, status.revision, record.state.wave)
    return {
        "phase": str(found.phase),
        "cause": found.cause,
        "hold": str(found.hold) if found.hold else "",
        "back": found.back,
    }


def print_rollout(status: RolloutStatus, console: Console) -> None:
    """``rollout of 0123456789ab:`` and one line per wave: its phase, cause and how it went back."""
    if not status.revision:
        return
    console.print(f"rollout of {markup_safe(status.revision[:12])}:", highlight=False)
    width = max((len(w.name) for w in status.waves), default=0)
    for wave in status.waves:
        line = f"  {markup_safe(wave.name.ljust(width))}  {markup_safe(wave.summary)}"
        console.print(line, highlight=False)
