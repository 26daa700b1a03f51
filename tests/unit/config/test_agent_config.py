"""Loading the agent's own config file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from syncer.config import GitCredentials, load_agent_config
from syncer.config.settings import HISTORY_KEEP, HISTORY_KEEP_MAX
from syncer.errors import ConfigError


def test_agent_config_resolves_paths_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "trust.yaml").write_text("mode: strict\n")
    config = {
        "source": {
            "url": "https://git.example.org/fleet.git",
            "branch": "production",
            "cacheDir": "cache",
            "timeoutSeconds": 15,
            "credentials": {"tokenFile": "secrets/token"},
        },
        "trustPolicy": "trust.yaml",
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    loaded = load_agent_config(tmp_path / "agent.yaml")
    assert loaded.source.branch == "production"
    assert loaded.source.cache_dir == tmp_path / "cache"
    assert loaded.source.timeout == 15.0
    assert loaded.source.credentials == GitCredentials(token_file=tmp_path / "secrets" / "token")
    assert loaded.trust.mode.value == "strict"


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ({}, "source.url: is required"),
        ({"url": "https://user:secret@git.example.org/f.git"}, "must not hold a password"),
        ({"url": "--upload-pack=x"}, "must not start with '-'"),
        ({"url": "https://h/f.git", "timeoutSeconds": 0}, "timeoutSeconds: must be a positive number"),
        ({"url": "https://h/f.git", "credentials": {"password": "x"}}, "unknown key(s) password"),
    ],
)
def test_invalid_agent_config(tmp_path: Path, source: dict[str, object], problem: str) -> None:
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump({"source": source, "trustPolicy": "trust.yaml"}))
    with pytest.raises(ConfigError) as raised:
        load_agent_config(tmp_path / "agent.yaml")
    assert problem in str(raised.value)
    assert "secret" not in str(raised.value)


def test_the_guard_policy_is_loaded_with_the_config_and_bad_cel_is_refused_there(tmp_path: Path) -> None:
    (tmp_path / "trust.yaml").write_text("mode: strict\n")
    config = {"source": {"url": "https://h/f.git"}, "trustPolicy": "trust.yaml"}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    assert load_agent_config(tmp_path / "agent.yaml").guards.empty

    (tmp_path / "guards.yaml").write_text(
        "rules:\n  - name: no-downgrade\n    expression: new.spec.version >= \n"
    )
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump({**config, "guardPolicy": "guards.yaml"}))
    with pytest.raises(ConfigError) as raised:
        load_agent_config(tmp_path / "agent.yaml")
    assert str(raised.value).startswith(f"{tmp_path / 'guards.yaml'}:3:")
    assert "rule no-downgrade" in str(raised.value)

    (tmp_path / "guards.yaml").write_text(
        "rules:\n  - name: no-downgrade\n    expression: new.spec.version >= old.spec.version\n"
    )
    loaded = load_agent_config(tmp_path / "agent.yaml")
    assert [r.name for r in loaded.guards.rules] == ["no-downgrade"]


@pytest.mark.parametrize(
    ("history", "keep", "problem"),
    [
        (None, HISTORY_KEEP, ""),
        ({"keep": 5}, 5, ""),
        ({"keep": 0}, 0, "history.keep: must be a positive number"),
        ({"keep": 2.5}, 0, "history.keep: must be a whole number from 1 to"),
        ({"keep": HISTORY_KEEP_MAX + 1}, 0, "history.keep: must be a whole number from 1 to"),
        ({"entries": 5}, 0, "unknown key(s) entries"),
    ],
)
def test_how_much_history_each_cluster_keeps(
    tmp_path: Path, history: dict[str, object] | None, keep: int, problem: str
) -> None:
    (tmp_path / "trust.yaml").write_text("mode: strict\n")
    config: dict[str, object] = {"source": {"url": "https://h/f.git"}, "trustPolicy": "trust.yaml"}
    if history is not None:
        config["history"] = history
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    if not problem:
        assert load_agent_config(tmp_path / "agent.yaml").history_keep == keep
        return
    with pytest.raises(ConfigError, match=r"agent\.yaml:") as raised:
        load_agent_config(tmp_path / "agent.yaml")
    assert problem in str(raised.value)
