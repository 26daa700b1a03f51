"""Loading the ``notifications`` section of the agent config: receivers, routes, bounds, and errors
that name the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.config import load_agent_config
from syncer.config.notifications import ReceiverKind
from syncer.config.settings import NotifySettings
from syncer.domain.notices import NoticeClass, Severity
from syncer.errors import ConfigError


def _load(
    tmp_path: Path,
    notifications: dict[str, Any],
    slack_url: str = "https://hooks.slack.example/services/T/B/x",
) -> Any:
    (tmp_path / "trust.yaml").write_text("mode: strict\n")
    (tmp_path / "hmac.key").write_text("k3y\n")
    (tmp_path / "slack.url").write_text(slack_url + "\n")
    (tmp_path / "token").write_text("t0ken\n")
    config = {
        "source": {"url": "https://git.example.org/fleet.git"},
        "trustPolicy": "trust.yaml",
        "notifications": notifications,
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return load_agent_config(tmp_path / "agent.yaml").notifications


RECEIVERS = [
    {"name": "ops", "type": "webhook", "url": "https://hooks.example/in", "secretFile": "hmac.key"},
    {"name": "chat", "type": "slack", "urlFile": "slack.url"},
    {"name": "forge", "type": "commit-status", "repository": "acme/fleet", "tokenFile": "token"},
]


def test_receivers_routes_and_bounds_load_with_secrets_that_never_print(tmp_path: Path) -> None:
    loaded = _load(
        tmp_path,
        {
            "receivers": RECEIVERS,
            "routes": [
                {"receivers": ["ops", "forge"]},
                {
                    "receivers": ["chat"],
                    "events": ["wave-failed", "revision-rejected"],
                    "minSeverity": "error",
                },
            ],
            "foldSeconds": 60,
            "unreachableAfterSeconds": 0,
        },
    )
    assert [r.kind for r in loaded.receivers.values()] == [
        ReceiverKind.WEBHOOK,
        ReceiverKind.SLACK,
        ReceiverKind.COMMIT_STATUS,
    ]
    assert loaded.receivers["ops"].secret.reveal() == "k3y"
    assert loaded.receivers["forge"].url == "https://api.github.com"
    assert loaded.receivers["forge"].context == "syncer"
    assert "k3y" not in repr(loaded)
    assert "t0ken" not in repr(loaded)
    assert "hooks.slack" not in repr(loaded)
    assert "k3y" not in str(loaded.receivers["ops"].secret)
    assert loaded.settings.fold_window == 60
    assert loaded.settings.unreachable_after == 0
    assert loaded.settings.window_wait_after == NotifySettings().window_wait_after
    names = [r.name for r in loaded.receivers_for(NoticeClass.WAVE_FAILED, Severity.ERROR)]
    assert names == ["ops", "forge", "chat"]
    assert [r.name for r in loaded.receivers_for(NoticeClass.WAVE_FAILED, Severity.WARNING)] == [
        "ops",
        "forge",
    ]
    assert [r.name for r in loaded.receivers_for(NoticeClass.SUSPENDED, Severity.ERROR)] == ["ops", "forge"]


def test_no_section_means_no_receivers(tmp_path: Path) -> None:
    (tmp_path / "trust.yaml").write_text("mode: strict\n")
    config = {"source": {"url": "https://git.example.org/fleet.git"}, "trustPolicy": "trust.yaml"}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    assert not load_agent_config(tmp_path / "agent.yaml").notifications.receivers


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"receivers": [{"name": "x", "type": "pager"}], "routes": []}, "'pager' is not a receiver type"),
        ({"receivers": RECEIVERS[:1]}, "routes: is required when receivers are given"),
        (
            {"receivers": RECEIVERS[:1], "routes": [{"receivers": ["nobody"]}]},
            "no receiver is named 'nobody'",
        ),
        (
            {"receivers": RECEIVERS[:1], "routes": [{"receivers": ["ops"], "events": ["wave-exploded"]}]},
            "'wave-exploded' is not an event class",
        ),
        (
            {"receivers": RECEIVERS[:1], "routes": [{"receivers": ["ops"], "minSeverity": "loud"}]},
            "'loud' is not info, warning or error",
        ),
        (
            {"receivers": [{**RECEIVERS[0], "url": "ftp://x/y"}], "routes": [{"receivers": ["ops"]}]},
            "must be an http:// or https:// URL",
        ),
        (
            {"receivers": [{**RECEIVERS[0], "url": "https://u:p@x/y"}], "routes": [{"receivers": ["ops"]}]},
            "must not hold credentials",
        ),
        (
            {"receivers": [{**RECEIVERS[0], "secretFile": "missing"}], "routes": [{"receivers": ["ops"]}]},
            "secretFile",
        ),
        (
            {"receivers": [{**RECEIVERS[2], "repository": "fleet"}], "routes": [{"receivers": ["forge"]}]},
            "'fleet' is not owner/name",
        ),
        *(
            (
                {"receivers": [{**RECEIVERS[0], "url": url}], "routes": [{"receivers": ["ops"]}]},
                f"must not point at {shown}: a link-local, unspecified or multicast address",
            )
            for url, shown in (
                ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
                ("http://[::ffff:169.254.169.254]/", "169.254.169.254"),
                ("http://[fe80::1]:8080/hook", "fe80::1"),
                ("http://0.0.0.0/hook", "0.0.0.0"),
            )
        ),
        ({"receivers": [RECEIVERS[0], RECEIVERS[0]], "routes": []}, "'ops' is defined twice"),
        ({"receivers": [{**RECEIVERS[0], "colour": "red"}]}, "unknown key(s) colour"),
        ({"foldSeconds": -1}, "must be a positive number"),
    ],
)
def test_a_bad_section_is_refused_with_file_and_line(
    tmp_path: Path, section: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, section)
    said = str(refused.value)
    assert problem in said
    assert f"{tmp_path / 'agent.yaml'}:" in said
    assert said.split(f"{tmp_path / 'agent.yaml'}:")[1].split(":", maxsplit=1)[0].isdigit(), said


@pytest.mark.parametrize(
    ("url", "loads"),
    [
        ("http://hooks.slack.example/services/T/B/x", False),
        ("http://10.0.0.7/services/T/B/x", False),
        ("http://127.0.0.1:8099/relay", True),
        ("https://hooks.slack.example/services/T/B/x", True),
    ],
)
def test_a_slack_url_is_https_unless_it_is_a_loopback_relay(tmp_path: Path, url: str, loads: bool) -> None:
    section = {"receivers": [RECEIVERS[1]], "routes": [{"receivers": ["chat"]}]}
    if loads:
        _load(tmp_path, section, slack_url=url)
        return
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, section, slack_url=url)
    assert "must be an https:// URL (plain http only to a loopback address)" in str(refused.value)
    assert "T/B/x" not in str(refused.value), "the Slack URL is a secret"


def test_allow_hosts_names_hosts_a_receiver_may_reach_whatever_they_resolve_to(tmp_path: Path) -> None:
    loaded = _load(
        tmp_path,
        {"receivers": RECEIVERS[:1], "routes": [{"receivers": ["ops"]}], "allowHosts": ["Relay.Internal"]},
    )
    assert loaded.allow_hosts == frozenset({"relay.internal"})
    with pytest.raises(ConfigError, match="allowHosts: lists host names"):
        _load(
            tmp_path,
            {
                "receivers": RECEIVERS[:1],
                "routes": [{"receivers": ["ops"]}],
                "allowHosts": ["169.254.169.254"],
            },
        )
