"""The one git environment (``syncer.gitenv``) asked by real git what it sees: no configuration but
the settings syncer pins, and no repository but the one it is run in, however the caller's process,
folder, ``HOME`` and temporary folder are set up."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from syncer.gitenv import GitEnvOptions, PrivateGit
from tests.integration.verify.kit import GitRepo

pytestmark = pytest.mark.integration


@pytest.fixture
def caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """A repository the process runs in and keeps its temporary files in, with configuration planted
    in its own config, ``HOME``, ``XDG_CONFIG_HOME``, a system file and ``GIT_CONFIG_*`` variables."""
    repo = GitRepo(tmp_path / "caller")
    planted = '[core]\n\tfsmonitor = /bin/false\n[url "git://evil.invalid/"]\n\tinsteadOf = /\n'
    own = repo.path / ".git" / "config"
    own.write_text(own.read_text() + planted)
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    for path in (home / ".gitconfig", home / ".config" / "git" / "config", tmp_path / "system"):
        path.write_text(planted)
    temporary = repo.path / "tmp"
    temporary.mkdir()
    monkeypatch.chdir(repo.path)
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    for name, value in {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_SYSTEM": str(tmp_path / "system"),
        "GIT_CONFIG_PARAMETERS": "'alias.st'='!/bin/false'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.sshCommand",
        "GIT_CONFIG_VALUE_0": "/bin/false",
        "GIT_DIR": str(repo.path / ".git"),
        "TMPDIR": str(temporary),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    return repo


def test_git_sees_only_the_pinned_settings(caller: GitRepo) -> None:
    pinned = GitEnvOptions(config=(("transfer.fsckObjects", "true"),))
    with PrivateGit() as private:
        assert private.root.is_relative_to(caller.path), "the private folder is inside the caller's repo"
        done = private.run(["git", "config", "--list", "--show-scope"], options=pinned, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines == [
        f"command\tcore.hookspath={Path('/dev/null')}",
        "command\tcore.fsmonitor=false",
        "command\ttransfer.fsckobjects=true",
    ]


def test_git_never_finds_the_callers_repository(caller: GitRepo) -> None:
    not_a_repository = caller.path / "plain-folder"
    not_a_repository.mkdir()
    with PrivateGit() as private:
        for repo in (None, not_a_repository):
            done = private.run(["git", "rev-parse", "--git-dir"], repo=repo, timeout=30)
            assert done.returncode != 0, (repo, done.stdout)
            assert b"not a git repository" in done.stderr
