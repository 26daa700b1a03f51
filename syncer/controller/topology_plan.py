"""Pure decisions for moving slots: which slot goes from which master to which, and what to do with an
open slot. No I/O: ``topology_reshard`` carries the plans out.

A rebalance gives every kept master its share of the 16384 slots (the shares of ``split_slots``,
so they differ by at most one) and every departing master none. Slots leave a master from the top
of its ranges, so ranges stay as contiguous as they can.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from syncer.controller.topology_parse import split_slots


@dataclass(frozen=True)
class Move:
    """Move one slot, with its keys, from the master ``source`` to the master ``target`` (node ids)."""

    slot: int
    source: str
    target: str


def balanced(owned: Mapping[str, Sequence[int]], keep: Sequence[str]) -> bool:
    """True when no departing master holds a slot and kept masters differ by at most one slot."""
    if any(slots for node, slots in owned.items() if node not in keep):
        return False
    counts = [len(owned.get(node, ())) for node in keep]
    return not counts or max(counts) - min(counts) <= 1


def plan_rebalance(owned: Mapping[str, Sequence[int]], keep: Sequence[str]) -> tuple[Move, ...]:
    """The moves that leave ``keep`` (master ids, at least one) with even shares and others with none.

    ``owned`` maps each master id to the slots it serves. Slots nobody serves are not planned (they
    are not any master's to give). Already balanced clusters (``balanced``) get no moves.
    """
    if not keep:
        raise ValueError("a rebalance needs at least one master to keep")
    if len(set(keep)) != len(keep):
        raise ValueError("a master is listed twice")
    if balanced(owned, keep):
        return ()
    shares = sorted((r.size for r in split_slots(len(keep))), reverse=True)
    # The biggest shares go to the masters that hold the most already: fewer moves.
    ranked = sorted(keep, key=lambda node: (-len(owned.get(node, ())), keep.index(node)))
    target = dict(zip(ranked, shares, strict=True))
    surplus: list[tuple[int, str]] = []
    for node, slots in owned.items():
        share = target.get(node, 0)
        extra = sorted(slots)[share:] if len(slots) > share else []
        surplus.extend((slot, node) for slot in extra)
    surplus.sort()
    moves: list[Move] = []
    for node in keep:
        missing = target[node] - len(owned.get(node, ()))
        while missing > 0 and surplus:
            slot, source = surplus.pop(0)
            moves.append(Move(slot, source, node))
            missing -= 1
    return tuple(moves)


@dataclass(frozen=True)
class OpenSlot:
    """A slot some master marks migrating or importing, with what each master said about it."""

    slot: int
    owner: str  # the node id serving it in the reference view, "" if none
    migrating: tuple[tuple[str, str], ...] = ()  # (node id, to node id)
    importing: tuple[tuple[str, str], ...] = ()  # (node id, from node id)


@dataclass(frozen=True)
class SlotFix:
    """How to close an open slot: move every key of it to ``target`` and bind it there, or, when no
    key moved yet, ``rollback``: clear the markers and leave the slot with its owner."""

    slot: int
    target: str
    rollback: bool = False


def fix_open_slot(open_slot: OpenSlot, keys: Mapping[str, int], alive: set[str]) -> SlotFix:
    """Decide how to close ``open_slot``, as ``redis-cli --cluster fix`` would, never dropping a key.

    ``keys`` is how many keys of the slot each reachable master holds; ``alive`` the ids of masters
    that answer. A migration whose target is alive is finished (the target may already hold moved
    keys, and clients were told to ask it). An import nobody migrates to, with no key on the
    importer, is rolled back. Otherwise the slot goes to the alive master that holds the most keys,
    the owner first on a tie.
    """
    for _node, to in open_slot.migrating:
        if to in alive:
            return SlotFix(open_slot.slot, to)
    holders = {node: count for node, count in keys.items() if count > 0 and node in alive}
    importers = [node for node, _src in open_slot.importing if node in alive]
    owner_alive = open_slot.owner in alive
    if not open_slot.migrating and owner_alive and not any(holders.get(n) for n in importers):
        return SlotFix(open_slot.slot, open_slot.owner, rollback=True)
    if holders:
        best = max(holders, key=lambda node: (holders[node], node == open_slot.owner))
        return SlotFix(open_slot.slot, best)
    if owner_alive:
        return SlotFix(open_slot.slot, open_slot.owner, rollback=True)
    if importers:
        return SlotFix(open_slot.slot, importers[0])
    raise ValueError(f"slot {open_slot.slot} is open and no master that could take it answers")
