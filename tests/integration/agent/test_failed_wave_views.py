"""A wave failed by health and rolled back, as every view of a real ``syncer run`` on the real fleet
shows it: the rollback's notification says which wave failed on which revision and why, and
``syncer status`` (``-o json`` and the text view) and ``syncer history`` read the wave failed with its
cause and where its cluster went back, from the clusters' records alone (the agent stopped)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.integration.agent.drills import FAST, commit_per_cluster, no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.receivers import Receiver
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


@pytest.fixture
def hook() -> Iterator[Receiver]:
    receiver = Receiver()
    try:
        yield receiver
    finally:
        receiver.close()


def _syncer(rig: Rig, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "syncer", *args, "--config", str(rig.root / "agent.yaml")]
    command += ["--state-namespace", rig.state_namespace]
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)


@pytest.mark.slow
def test_a_wave_failed_and_rolled_back_reads_failed_with_its_cause_in_status_history_and_the_notice(
    rig: Rig, agents: Agents, hook: Receiver
) -> None:
    rig.start_controllers()
    config = rig.root / "agent.yaml"
    config.write_text(
        config.read_text()
        + f"notifications:\n  receivers:\n  - name: ops\n    type: webhook\n    url: {hook.url}/hook\n"
        + "    secretFile: hmac.key\n  routes:\n  - receivers: [ops]\n"
    )
    (rig.root / "hmac.key").write_text("hmac-key-of-the-failed-wave-test\n")
    policy = write_policy(rig, "fast.yaml", FAST)
    versions = {"canary": "7.2.4", "eu-1": "7.2.4", "us-1": "7.2.4"}
    with agents.shown_on_failure():
        good = commit_per_cluster(rig, "good", versions)
        agent = agents.start("agent", rig.args(policy, "--no-leader-elect"))
        eventually(
            "the good revision on every cluster",
            lambda: agent.running() and {s.revision for s in rig.states().values()} == {good},
            3 * ROLLOUT_TIMEOUT,
        )
        bad = commit_per_cluster(rig, "bad canary", {**versions, "canary": "7.2.5"}, hold=("canary",))
        back = eventually(
            "the rollback's notice",
            lambda: hook.bodies(kind="rollback-done", cluster="canary"),
            3 * ROLLOUT_TIMEOUT,
        )[0]
        assert (back["wave"], back["revision"]) == ("canary", good)
        assert back["message"].startswith(f"wave canary failed at {bad[:12]}: "), back["message"]
        assert f"canary rolled back to {good[:12]}" in back["message"]
        failed = hook.bodies(kind="wave-failed", revision=bad)
        assert [b["wave"] for b in failed] == ["canary"]
        no_traceback(agent)
        agent.kill()

    # The agent is down: what follows is read from the clusters' records alone.
    shown = _syncer(rig, "status", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    rollout = document["rollout"]
    assert rollout["revision"] == bad
    waves = {w["name"]: w for w in rollout["waves"]}
    assert [w["name"] for w in rollout["waves"]] == ["canary", "eu", "us"]
    assert (waves["canary"]["phase"], waves["eu"]["phase"], waves["us"]["phase"]) == (
        "failed",
        "pending",
        "pending",
    )
    assert waves["canary"]["cause"], "the failure's cause"
    assert waves["canary"]["back"] == f"rolled back to {good[:12]}"
    canary = next(row for row in document["clusters"] if row["cluster"] == "canary")
    assert canary["rollout"]["phase"] == "failed"
    assert canary["rollout"]["cause"] == waves["canary"]["cause"]

    text = _syncer(rig, "status")
    assert text.returncode == 0, text.stderr
    assert f"rollout of {bad[:12]}:" in text.stdout
    line = next(line for line in text.stdout.splitlines() if line.strip().startswith("canary  "))
    assert line.split()[1] == "failed:", text.stdout
    assert waves["canary"]["cause"][:40] in line
    assert f"(rolled back to {good[:12]})" in line

    history = _syncer(rig, "history", "-o", "json")
    assert history.returncode == 0, history.stderr
    assert json.loads(history.stdout)["rollout"] == rollout
    entries = next(r for r in json.loads(history.stdout)["clusters"] if r["cluster"] == "canary")["entries"]
    assert [(e["revision"], e["outcome"], e["goingBack"]) for e in entries] == [
        (good, "healthy", False),
        (bad, "failed", False),
        (good, "rolled-back", True),
    ]
