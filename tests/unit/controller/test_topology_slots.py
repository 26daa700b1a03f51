"""Splitting the 16384 slots across shards, and compressing slot numbers into ranges."""

from __future__ import annotations

import itertools

import pytest

from syncer.controller.topology_parse import SLOT_COUNT, SlotRange, ranges_of, split_slots


def test_three_shards_split_like_a_standard_cluster() -> None:
    assert split_slots(3) == (SlotRange(0, 5460), SlotRange(5461, 10922), SlotRange(10923, 16383))


def test_one_shard_takes_everything() -> None:
    assert split_slots(1) == (SlotRange(0, 16383),)


def test_even_split_has_equal_sizes() -> None:
    assert [r.size for r in split_slots(4)] == [4096] * 4
    assert split_slots(2) == (SlotRange(0, 8191), SlotRange(8192, 16383))


@pytest.mark.parametrize("shards", [*range(1, 65), 100, 1000, 4095, 16383, 16384])
def test_ranges_are_contiguous_cover_everything_and_differ_by_at_most_one(shards: int) -> None:
    ranges = split_slots(shards)
    assert len(ranges) == shards
    assert ranges[0].start == 0
    assert ranges[-1].end == SLOT_COUNT - 1
    for before, after in itertools.pairwise(ranges):
        assert after.start == before.end + 1
    sizes = [r.size for r in ranges]
    assert sum(sizes) == SLOT_COUNT
    assert max(sizes) - min(sizes) <= 1


def test_remainder_is_spread_not_piled_on_one_shard() -> None:
    # 16384 = 5 * 3276 + 4: four shards get one extra slot, and not all at the front or back.
    sizes = [r.size for r in split_slots(5)]
    assert sorted(sizes) == [3276, 3277, 3277, 3277, 3277]
    # 16384 = 7 * 2340 + 4: the four extra slots alternate instead of going to the first four shards.
    assert [r.size for r in split_slots(7)] == [2341, 2340, 2341, 2340, 2341, 2340, 2341]


@pytest.mark.parametrize("shards", [0, -1, 16385])
def test_impossible_shard_counts_are_refused(shards: int) -> None:
    with pytest.raises(ValueError, match="shards must be between 1 and 16384"):
        split_slots(shards)


def test_ranges_of_compresses_and_sorts() -> None:
    assert ranges_of([5, 3, 4, 10, 0, 11, 4]) == (SlotRange(0, 0), SlotRange(3, 5), SlotRange(10, 11))
    assert ranges_of([]) == ()
    assert ranges_of(range(SLOT_COUNT)) == (SlotRange(0, 16383),)


def test_slot_range_rejects_out_of_bounds_and_prints_like_redis() -> None:
    assert str(SlotRange(7, 7)) == "7"
    assert str(SlotRange(0, 5460)) == "0-5460"
    with pytest.raises(ValueError, match="invalid slot range"):
        SlotRange(5, 4)
    with pytest.raises(ValueError, match="invalid slot range"):
        SlotRange(0, 16384)
