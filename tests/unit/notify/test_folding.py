"""Folding duplicates over a window, per receiver."""

from __future__ import annotations

from syncer.domain.notices import Notice, NoticeClass, Severity
from syncer.notify.folding import Folder


def _notice(**fields: str) -> Notice:
    base = {"cluster": "us-1", "revision": "abc", "reason": "unreachable", "detail": "refused (for 1s)"}
    return Notice(NoticeClass.CLUSTER_UNREACHABLE, Severity.WARNING, **{**base, **fields})


def test_a_repeat_within_the_window_folds_and_after_it_goes_out_again() -> None:
    folder = Folder(window=60)
    key = _notice().fold_key
    assert folder.admit("ops", key, 0.0)
    assert not folder.admit("ops", key, 30.0)
    assert not folder.admit("ops", _notice(detail="refused (for 59s)").fold_key, 59.0)
    assert folder.admit("ops", key, 60.0)


def test_folding_is_per_receiver_and_per_cluster_revision_and_reason() -> None:
    folder = Folder(window=60)
    assert folder.admit("ops", _notice().fold_key, 0.0)
    assert folder.admit("chat", _notice().fold_key, 1.0)
    assert folder.admit("ops", _notice(cluster="eu-1").fold_key, 2.0)
    assert folder.admit("ops", _notice(revision="def").fold_key, 3.0)
    assert folder.admit("ops", _notice(reason="other").fold_key, 4.0)
    assert not folder.admit("ops", _notice().fold_key, 5.0)


def test_a_flood_of_distinct_keys_is_pruned_without_forgetting_recent_ones() -> None:
    folder = Folder(window=10)
    for i in range(2000):
        folder.admit("ops", ("k", i), float(i))
    assert not folder.admit("ops", ("k", 1999), 2000.0)
    assert folder.admit("ops", ("k", 0), 2000.0)
