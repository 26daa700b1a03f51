"""Redaction of secrets, and the source options as the agent config loads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.config import GitCredentials, load_agent_config
from syncer.source import SourceOptions, redact
from syncer.source.runner import url_secrets


@pytest.mark.parametrize(
    ("text", "secrets", "expected"),
    [
        ("fatal: https://user:tok123@git.example.org/f.git", (), "fatal: https://***@git.example.org/f.git"),
        ("ssh://git@host:22/f.git failed", (), "ssh://***@host:22/f.git failed"),
        ("header was Basic dG9rMTIz and tok123", ("tok123", "dG9rMTIz"), "header was Basic *** and ***"),
        ("git@host:fleet.git (scp style has no secret)", (), "git@host:fleet.git (scp style has no secret)"),
        ("nothing to hide", ("",), "nothing to hide"),
        ("'https://u:p@ss:w@h.example/f.git'", (), "'https://***@h.example/f.git'"),
        ("https://h.example/f.git?access_token=tok9&x=1 failed", (), "https://h.example/f.git?*** failed"),
        ("https://h/org/ghp_0123456789abcdefghijABCDEFGHIJ/f.git", (), "https://h/org/***/f.git"),
        ("token glpat-abcdefghijklmnop1234 leaked", (), "token *** leaked"),
    ],
)
def test_redact(text: str, secrets: tuple[str, ...], expected: str) -> None:
    assert redact(text, secrets) == expected


def test_the_agent_config_holds_the_source_options_with_the_trust_policys_say_on_rewrites(
    tmp_path: Path,
) -> None:
    (tmp_path / "trust.yaml").write_text("mode: head\nsigners: []\nallowHistoryRewrite: true\n")
    (tmp_path / "agent.yaml").write_text(
        "source:\n  url: ssh://git@host/f.git\n  branch: prod\n  cacheDir: c\n  timeoutSeconds: 5\n"
        "  credentials: {sshKeyFile: k, knownHostsFile: kh}\ntrustPolicy: trust.yaml\n"
    )
    options = load_agent_config(tmp_path / "agent.yaml").source
    creds = GitCredentials(ssh_key_file=tmp_path / "k", known_hosts_file=tmp_path / "kh")
    assert options == SourceOptions(
        url="ssh://git@host/f.git",
        cache_dir=tmp_path / "c",
        branch="prod",
        credentials=creds,
        timeout=5,
        allow_history_rewrite=True,
    )
    assert options.clone_filter == "blob:none"


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("https://fleet:p@ss:w0rd@h.example/f.git", "p@ss:w0rd"),
        ("https://fleet:p%40ss@h.example/f.git", "p@ss"),
        ("https://h.example/f.git?token=abc123", "token=abc123"),
    ],
)
def test_url_secrets_cover_what_a_message_may_echo(url: str, secret: str) -> None:
    assert secret in url_secrets(url)
    assert secret not in redact(f"fatal: cannot reach {url} ({secret})", url_secrets(url))
