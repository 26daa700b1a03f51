"""The one rule every person's act names a revision by: a full id or 7+ hexadecimal characters that
name exactly one candidate; anything else refused with the candidates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from syncer.errors import RevisionNotNamed
from syncer.rollout.revision_names import MIN_PREFIX, matches, resolve, well_formed

A = "3f2a9c1" + "0" * 33
B = "3f2a9c2" + "1" * 33
C = "c0ffee0" + "2" * 33


def test_a_full_id_or_a_unique_prefix_of_seven_or_more_names_it_in_any_case() -> None:
    assert resolve(A, [A, B, C], "in flight is") == A
    assert resolve("3F2A9C1", [A, B, C], "in flight is") == A
    assert resolve(f"  {C[:9]} ", [A, B, C], "in flight is") == C


@pytest.mark.parametrize("given_name", ["3f2a9c", "", "   ", "zzzzzzzz", "3f2a9c1-", "*"])
def test_a_name_that_cannot_be_a_revision_is_refused_listing_the_candidates(given_name: str) -> None:
    with pytest.raises(RevisionNotNamed, match="does not name a revision") as refused:
        resolve(given_name, [A, C], "in flight is")
    assert "in flight is 3f2a9c100000, c0ffee022222" in str(refused.value)


def test_a_prefix_of_several_is_ambiguous_and_names_them() -> None:
    twin = A[:10] + "f" * 30
    with pytest.raises(RevisionNotNamed, match="is ambiguous") as refused:
        resolve(A[:8], [A, twin], "x")
    assert refused.value.matched == tuple(sorted((A, twin)))
    assert resolve(A[:11], [A, twin], "x") == A


def test_a_name_of_none_of_them_lists_what_there_is() -> None:
    expected = "refused: wave eu waits for promote of c0ffee022222, not deadbeef"
    with pytest.raises(RevisionNotNamed, match=expected):
        resolve("deadbeef", [C], "wave eu waits for promote of")
    with pytest.raises(RevisionNotNamed, match="of none, not deadbeef"):
        resolve("deadbeef", [], "of")


def test_a_hostile_name_is_shown_bounded() -> None:
    with pytest.raises(RevisionNotNamed) as refused:
        resolve("x" * 10_000, [A], "in flight is")
    assert len(str(refused.value)) < 300


HEX_IDS = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)


@given(st.text(max_size=50), st.lists(HEX_IDS, max_size=5))
def test_resolve_returns_a_candidate_the_name_matches_or_refuses(name: str, known: list[str]) -> None:
    try:
        found = resolve(name, known, "x")
    except RevisionNotNamed:
        named = sum(matches(name, r) for r in set(known))
        assert named != 1 or not (well_formed(name) or name.strip() in known)
        return
    assert found in known
    assert matches(name, found)
    assert well_formed(name) or name.strip() == found
    assert len(name.strip()) >= MIN_PREFIX or name.strip() == found
