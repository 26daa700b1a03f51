"""What an apply says it left behind: kept objects and refused prunes, named with their reasons."""

from __future__ import annotations

from syncer.domain.changeset import ALREADY_GONE, ChangeEntry, ChangeSet, EntryOutcome
from syncer.domain.objects import ObjectKey
from syncer.domain.plans import Action


def _key(name: str) -> ObjectKey:
    return ObjectKey("c", "", "Namespace", "", name)


def test_an_apply_that_kept_nothing_says_nothing() -> None:
    entries = (
        ChangeEntry(_key("a"), Action.CREATE, EntryOutcome.APPLIED),
        ChangeEntry(_key("b"), Action.PRUNE, EntryOutcome.APPLIED),
        ChangeEntry(_key("c"), Action.PRUNE, EntryOutcome.SKIPPED, ALREADY_GONE),
    )
    assert ChangeSet("c", "r", entries).kept() == ""


def test_opted_out_and_refused_prunes_are_named_with_their_reasons() -> None:
    opted_out = "kept: prune disabled (syncer.dev/prune: disabled)"
    entries = (
        ChangeEntry(_key("a"), Action.CREATE, EntryOutcome.APPLIED),
        ChangeEntry(_key("keep-me"), Action.KEEP, EntryOutcome.SKIPPED, opted_out),
        ChangeEntry(_key("relabelled"), Action.PRUNE, EntryOutcome.SKIPPED, "kept: no longer labelled"),
    )
    said = ChangeSet("c", "r", entries).kept()
    assert said.startswith("kept 2 object(s) git no longer wants: ")
    assert f"Namespace/keep-me ({opted_out})" in said
    assert "Namespace/relabelled (kept: no longer labelled)" in said


def test_a_long_list_is_cut_and_counted() -> None:
    entries = tuple(ChangeEntry(_key(f"n{i}"), Action.KEEP, EntryOutcome.SKIPPED, "kept") for i in range(8))
    said = ChangeSet("c", "r", entries).kept(shown=3)
    assert said.startswith("kept 8 object(s)")
    assert said.endswith("; and 5 more")
    assert "Namespace/n3" not in said
