"""Records are evidence, not authority: one cluster's sync-state ConfigMap forged to name a commit
nobody pushed (a random id) blocks nothing on a real ``syncer run`` over the real fleet. The
fleet's new tips still roll out to every other cluster (before, every new tip was refused as "history
rewritten"), the cluster recording it is shown so in ``syncer status``, and the revision in force
goes to it too."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from dataclasses import replace

import pytest

from syncer.domain.sync_state import SyncPhase
from syncer.status import StateStore
from tests.integration.agent.drills import FAST, commit_per_cluster, no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

VERSIONS = {"canary": "7.2.4", "eu-1": "7.2.4", "us-1": "7.2.4"}


def _on(rig: Rig, revision: str, clusters: tuple[str, ...]) -> bool:
    states = rig.states()
    return all((states[c].revision, states[c].phase) == (revision, SyncPhase.HEALTHY) for c in clusters)


@pytest.mark.slow
def test_a_forged_record_naming_an_unknown_commit_blocks_nothing_and_is_shown_on_its_cluster(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    policy = write_policy(rig, "fast.yaml", FAST)
    everyone = ("canary", "eu-1", "us-1")
    with agents.shown_on_failure():
        good = commit_per_cluster(rig, "good", VERSIONS)
        agent = agents.start("agent", rig.args(policy, "--no-leader-elect"))
        eventually("good on every cluster", lambda: agent.running() and _on(rig, good, everyone), 240)

        # Whoever can write the canary's ConfigMap names a commit the repository never held.
        forged = secrets.token_hex(20)
        store = StateStore(rig.clients["canary"], rig.state_namespace)
        store.save(replace(store.load().state, revision=forged, last_good=forged))

        newer = commit_per_cluster(rig, "newer", {**VERSIONS, "us-1": "7.2.5"})
        eventually(
            "the newer tip on the other clusters",
            lambda: _on(rig, newer, ("eu-1", "us-1")),
            3 * ROLLOUT_TIMEOUT,
        )
        assert not agent.steps("revision-rejected"), "no tip refused as history rewritten"
        told = [r for r in agent.steps("record-unknown") if r.get("cluster") == "canary"]
        assert told, "the forged record is told on its cluster"
        assert told[0]["revision"] == forged
        # The revision in force goes to the cluster too: its record names a commit again.
        eventually("the canary on the newer tip", lambda: _on(rig, newer, ("canary",)), ROLLOUT_TIMEOUT)
        assert rig.states()["canary"].last_good == newer
        no_traceback(agent)
        agent.kill()

    command = [sys.executable, "-m", "syncer", "status", "-o", "json"]
    command += ["--config", str(rig.root / "agent.yaml"), "--state-namespace", rig.state_namespace]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert shown.returncode == 0, shown.stderr
    rows = {row["cluster"]: row for row in json.loads(shown.stdout)["clusters"]}
    expected = f"records unknown commit {forged[:12]} (not in the repository; ignored since "
    assert rows["canary"]["unknownRecord"].startswith(expected), rows["canary"]
    assert rows["canary"]["lastError"].startswith(expected)
    assert (rows["eu-1"]["unknownRecord"], rows["us-1"]["unknownRecord"]) == ("", "")
