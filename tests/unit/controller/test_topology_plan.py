"""Slot plans: rebalances end within one slot of even and drain departing masters; open slots are
finished, rolled back or given to the holder of their keys, never to a master that would drop keys."""

from __future__ import annotations

import pytest

from syncer.controller.topology_parse import split_slots
from syncer.controller.topology_plan import (
    Move,
    OpenSlot,
    SlotFix,
    balanced,
    fix_open_slot,
    plan_rebalance,
)


def owned_by(*ranges: tuple[int, int]) -> dict[str, list[int]]:
    return {f"m{i}": list(range(a, b + 1)) for i, (a, b) in enumerate(ranges)}


def apply(owned: dict[str, list[int]], moves: tuple[Move, ...]) -> dict[str, list[int]]:
    result = {k: list(v) for k, v in owned.items()}
    for move in moves:
        assert move.slot in result[move.source], move
        result[move.source].remove(move.slot)
        result.setdefault(move.target, []).append(move.slot)
    return result


def three() -> dict[str, list[int]]:
    return owned_by(*((r.start, r.end) for r in split_slots(3)))


def test_scale_out_gives_the_new_master_an_even_share() -> None:
    owned = three()
    moves = plan_rebalance(owned, ["m0", "m1", "m2", "new"])
    after = apply(owned, moves)
    counts = sorted(len(v) for v in after.values())
    assert counts == [4096, 4096, 4096, 4096]
    assert all(m.target == "new" for m in moves)
    assert len(moves) == 4096


def test_scale_in_drains_the_departing_master_only_into_kept_ones() -> None:
    owned = three()
    moves = plan_rebalance(owned, ["m0", "m1"])
    after = apply(owned, moves)
    assert after["m2"] == []
    assert sorted(len(after[m]) for m in ("m0", "m1")) == [8192, 8192]
    assert {m.source for m in moves} == {"m2"}


def test_a_balanced_cluster_moves_nothing() -> None:
    owned = three()
    assert balanced(owned, ["m0", "m1", "m2"])
    assert plan_rebalance(owned, ["m0", "m1", "m2"]) == ()


def test_an_uneven_cluster_ends_within_one_slot() -> None:
    owned = owned_by((0, 9999), (10000, 16000), (16001, 16383))
    after = apply(owned, plan_rebalance(owned, ["m0", "m1", "m2"]))
    counts = [len(v) for v in after.values()]
    assert max(counts) - min(counts) <= 1
    assert sum(counts) == 16384


def test_plan_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="at least one"):
        plan_rebalance(three(), [])
    with pytest.raises(ValueError, match="twice"):
        plan_rebalance(three(), ["m0", "m0"])


def test_an_open_migration_to_a_live_target_is_finished() -> None:
    slot = OpenSlot(7, "a", migrating=(("a", "b"),), importing=(("b", "a"),))
    assert fix_open_slot(slot, {"a": 3, "b": 2}, {"a", "b"}) == SlotFix(7, "b")


def test_an_import_nothing_was_moved_for_is_rolled_back() -> None:
    slot = OpenSlot(7, "a", importing=(("b", "a"),))
    assert fix_open_slot(slot, {"a": 3, "b": 0}, {"a", "b"}) == SlotFix(7, "a", rollback=True)


def test_an_import_that_already_holds_keys_is_finished_on_the_importer() -> None:
    slot = OpenSlot(7, "a", importing=(("b", "a"),))
    assert fix_open_slot(slot, {"a": 0, "b": 4}, {"a", "b"}) == SlotFix(7, "b")


def test_a_migration_to_a_dead_target_goes_to_the_key_holder() -> None:
    slot = OpenSlot(7, "a", migrating=(("a", "gone"),))
    assert fix_open_slot(slot, {"a": 5}, {"a"}) == SlotFix(7, "a")


def test_an_open_slot_nobody_alive_can_take_is_an_error() -> None:
    slot = OpenSlot(7, "gone", migrating=(("gone", "also-gone"),))
    with pytest.raises(ValueError, match="no master"):
        fix_open_slot(slot, {}, set())
