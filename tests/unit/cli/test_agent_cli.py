"""Exit codes and messages of the agent commands for inputs that need no cluster."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from syncer.cli import cli


def test_a_config_naming_a_missing_trust_policy_is_an_error(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("source: {url: ./fleet.git}\ntrustPolicy: missing.yaml\n")
    result = CliRunner().invoke(cli, ["sync", "--once", "--config", str(config)])
    assert result.exit_code == 2
    assert "missing.yaml: cannot read" in result.output


def test_a_bad_rollout_policy_is_an_error_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "trust.yaml").write_text("mode: head\nsigners: []\n")
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"source: {{url: ./fleet.git, cacheDir: {tmp_path / 'cache'}}}\ntrustPolicy: trust.yaml\n"
    )
    rollout = tmp_path / "rollout.yaml"
    rollout.write_text("waves:\n  - percent: 50\n")
    result = CliRunner().invoke(
        cli, ["sync", "--once", "--config", str(config), "--rollout-policy", str(rollout)]
    )
    assert result.exit_code == 2
    assert "the last wave must reach percent: 100" in result.output


def test_run_rejects_lease_timings_that_cannot_work(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("source: {url: ./fleet.git}\ntrustPolicy: trust.yaml\n")
    result = CliRunner().invoke(
        cli, ["run", "--config", str(config), "--lease-duration", "2s", "--lease-renew-deadline", "5s"]
    )
    assert result.exit_code == 2
    assert "--lease-renew-deadline: must be above 0 and less than --lease-duration" in result.output


def test_run_rejects_a_health_poll_of_zero(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("source: {url: ./fleet.git}\ntrustPolicy: trust.yaml\n")
    result = CliRunner().invoke(cli, ["run", "--config", str(config), "--health-poll", "0s"])
    assert result.exit_code == 2
    assert "--health-poll: must be above 0" in result.output
