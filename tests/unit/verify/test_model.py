"""The verification result: overall verdict, first failure and the error it raises."""

from __future__ import annotations

import pytest

from syncer.config import VerifyMode
from syncer.errors import VerificationError
from syncer.verify import CommitVerdict, Verdict, VerificationResult


def commit(sha: str, verdict: Verdict, reason: str = "r") -> CommitVerdict:
    return CommitVerdict(commit=sha * 40, subject=f"subject {sha}", verdict=verdict, reason=reason)


def test_all_trusted() -> None:
    result = VerificationResult(
        "a" * 40, VerifyMode.STRICT, "", (commit("a", Verdict.TRUSTED), commit("b", Verdict.TRUSTED))
    )
    assert (result.trusted, result.verdict, result.failure, result.first_failure) == (
        True,
        Verdict.TRUSTED,
        "",
        None,
    )
    assert result.require_trusted() is result


def test_first_failure_decides() -> None:
    commits = (
        commit("a", Verdict.TRUSTED),
        commit("b", Verdict.UNSIGNED, "no signature"),
        commit("c", Verdict.OUT_OF_SCOPE),
    )
    result = VerificationResult("c" * 40, VerifyMode.STRICT, "0" * 40, commits)
    assert (result.trusted, result.verdict) == (False, Verdict.UNSIGNED)
    assert result.failure == "commit bbbbbbbbbbbb ('subject b') is not trusted: unsigned: no signature"
    with pytest.raises(
        VerificationError, match=r"revision c{40} is not trusted \(strict mode\): commit bbbbbbbbbbbb"
    ):
        result.require_trusted()


def test_no_commits_is_not_trusted() -> None:
    assert VerificationResult("a" * 40, VerifyMode.HEAD, "", ()).trusted is False
