"""Redaction of secrets and source options built from the agent config."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.config import GitCredentials, SourceSettings
from syncer.source import SourceOptions, redact


@pytest.mark.parametrize(
    ("text", "secrets", "expected"),
    [
        ("fatal: https://user:tok123@git.example.org/f.git", (), "fatal: https://***@git.example.org/f.git"),
        ("ssh://git@host:22/f.git failed", (), "ssh://***@host:22/f.git failed"),
        ("header was Basic dG9rMTIz and tok123", ("tok123", "dG9rMTIz"), "header was Basic *** and ***"),
        ("git@host:fleet.git (scp style has no secret)", (), "git@host:fleet.git (scp style has no secret)"),
        ("nothing to hide", ("",), "nothing to hide"),
    ],
)
def test_redact(text: str, secrets: tuple[str, ...], expected: str) -> None:
    assert redact(text, secrets) == expected


def test_options_from_settings() -> None:
    creds = GitCredentials(ssh_key_file=Path("k"), known_hosts_file=Path("kh"))
    settings = SourceSettings(
        url="ssh://git@host/f.git", branch="prod", cache_dir=Path("c"), timeout=5, credentials=creds
    )
    options = SourceOptions.from_settings(settings, allow_history_rewrite=True)
    assert options == SourceOptions(
        url="ssh://git@host/f.git",
        cache_dir=Path("c"),
        branch="prod",
        credentials=creds,
        timeout=5,
        allow_history_rewrite=True,
    )
    assert options.clone_filter == "blob:none"
