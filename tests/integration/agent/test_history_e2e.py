"""``syncer history`` as a real process beside a real ``syncer run`` on the real 3-cluster fleet:
the clusters record each revision applied to them (signer, times, wave, outcome, which replica), the
record survives an agent restart with its cache removed, is trimmed to the configured size, and a
record broken by hand is refused with a clear error."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from typing import Any

import pytest
import yaml

from syncer.kube import ApplyOptions
from syncer.status.history import HISTORY_KEY
from syncer.status.state_store import STATE_CONFIGMAP
from tests.integration.agent.drills import no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import CLUSTERS, ROLLOUT_TIMEOUT, TWO_WAVES, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


def _syncer(rig: Rig, *args: str, columns: int = 200) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "syncer", *args, "--config", str(rig.root / "agent.yaml")]
    command += ["--state-namespace", rig.state_namespace]
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)


def _history(rig: Rig) -> dict[str, list[dict[str, Any]]]:
    done = _syncer(rig, "history", "-o", "json")
    assert done.returncode == 0, done.stderr
    return {row["cluster"]: row["entries"] for row in json.loads(done.stdout)["clusters"]}


@pytest.mark.slow
def test_history_of_five_revisions_survives_a_restart_with_an_empty_cache(rig: Rig, agents: Agents) -> None:
    rig.start_controllers()
    # TWO_WAVES without its bakes: the history records each revision however long its waves bake.
    unbaked = write_policy(
        rig, "unbaked.yaml", {**TWO_WAVES, "defaults": {**TWO_WAVES["defaults"], "bake": "0s"}}
    )
    with agents.shown_on_failure():
        agent = agents.start("agent", rig.args(unbaked, "--no-leader-elect"))
        revisions = []
        for patch in range(1, 6):
            revisions.append(rig.commit(f"sessions cache 7.2.{patch}", f"7.2.{patch}"))
            eventually(f"revision {patch} healthy", lambda: rig.all_healthy(revisions[-1]), ROLLOUT_TIMEOUT)
        eventually(
            "five settled entries on every cluster",
            lambda: all(len(e) == 5 and e[-1]["outcome"] == "healthy" for e in _history(rig).values()),
            30,
        )
        first = _history(rig)
        for cluster in CLUSTERS:
            entries = first[cluster]
            assert [e["revision"] for e in entries] == revisions
            assert {(e["outcome"], e["signer"]) for e in entries} == {("healthy", "ops")}
            assert {e["wave"] for e in entries} == {"canary" if cluster == "canary" else "rest"}
            assert all(0 < e["started"] <= e["ended"] for e in entries)
            assert len({e["by"] for e in entries}) == 1
            assert entries[0]["by"].startswith("agent ")
        # The table fits the terminal it is given.
        table = _syncer(rig, "history", "--cluster", "us-1", columns=100)
        assert table.returncode == 0, table.stderr
        assert revisions[-1][:12] in table.stdout
        assert max(len(line) for line in table.stdout.splitlines()) <= 100

        agent.send(signal.SIGTERM)
        eventually("the agent stopped", agent.gone, 60)
        shutil.rmtree(rig.root / "cache")
        config = yaml.safe_load((rig.root / "agent.yaml").read_text())
        config["history"] = {"keep": 4}
        (rig.root / "agent.yaml").write_text(yaml.safe_dump(config))
        # Read from the clusters alone: the agent is down and its cache gone.
        assert _history(rig) == first

        again = agents.start("again", rig.args(unbaked, "--no-leader-elect"))
        sixth = rig.commit("sessions cache 7.2.6", "7.2.6")
        eventually("the sixth revision healthy", lambda: rig.all_healthy(sixth), ROLLOUT_TIMEOUT)
        eventually(
            "the sixth entry settled",
            lambda: all(e[-1]["outcome"] == "healthy" for e in _history(rig).values()),
            30,
        )
        for cluster, entries in _history(rig).items():
            assert [e["revision"] for e in entries] == [*revisions[2:], sixth], cluster
            assert entries[:-1] == first[cluster][2:]
            assert entries[-1]["by"] != entries[0]["by"]  # another replica applied it
        no_traceback(agent, again)

    # A record broken by hand: a clear error naming the cluster, ConfigMap and key; no traceback.
    broken = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": STATE_CONFIGMAP, "namespace": rig.state_namespace},
        "data": {HISTORY_KEY: '{"version": 1, "entries": [{"revision": "x", "outcome": "exploded"}]}'},
    }
    rig.clients["us-1"].apply(broken, ApplyOptions(field_manager="someone-by-hand", force=True))
    done = _syncer(rig, "history", "-o", "json")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert (
        f"us-1: ConfigMap {rig.state_namespace}/{STATE_CONFIGMAP}, key {HISTORY_KEY}: entry 1:" in done.stderr
    )
    rows = {row["cluster"]: row for row in json.loads(done.stdout)["clusters"]}
    assert len(rows["eu-1"]["entries"]) == 4
