"""``syncer abort`` on the real 3-cluster fleet: the canary wave had passed on the revision and the
rest waits at its manual gate. The abort puts the canary back on the revision it ran healthy before,
the aborted revision never becomes a last good revision (also across a restart: a new rollout reading
the clusters), and no wave takes it until a retry. Namespaces only: healthy once they exist."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain.objects import DesiredFleet
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions, RolloutReport
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from tests.integration.conftest import FleetHandle
from tests.support.agent_config import acts_config
from tests.support.fleet_repo import FleetRepo
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration


def gated() -> RolloutPolicy:
    gate = WaveGate(max_concurrent=2, health_timeout=30, bake=0)
    canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}), gate)
    return RolloutPolicy((canary, WavePolicy("rest", 100, None, replace(gate, manual=True))), rollback=True)


def sync(
    clients: dict[str, ClusterClient], prefix: str, fleet: DesiredFleet, last_good: DesiredFleet
) -> RolloutReport:
    """One pass of a new rollout (as a restarted agent would run it: it reads the clusters first)."""
    options = RolloutOptions(rollout=gated(), state_namespace=f"{prefix}-state", health_poll=0.5)
    return FleetRollout(clients, options, hooks=UNFENCED_HOOKS).sync(fleet, last_good=last_good)


def states(clients: dict[str, ClusterClient], prefix: str) -> dict[str, ClusterSyncState]:
    return {n: StateStore(c, f"{prefix}-state").load().state for n, c in clients.items()}


def labels(clients: dict[str, ClusterClient], prefix: str) -> dict[str, str]:
    return {n: c.get("v1", "Namespace", prefix)["metadata"]["labels"]["rev"] for n, c in clients.items()}


def person(fleet: FleetHandle, tmp_path: Path, prefix: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``syncer <args>`` as a person runs it, against the fleet's clusters."""
    config = acts_config(tmp_path, fleet.kubeconfig, fleet.names)
    command = [sys.executable, "-m", "syncer", *args, "--config", str(config)]
    command += ["--state-namespace", f"{prefix}-state", "--by", "ops"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_an_abort_puts_a_passed_canary_back_and_the_aborted_revision_is_never_last_good(
    fleet: FleetHandle, clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix)
    first = repo.write_documents("r1", [repo.namespace({"rev": "r1"})])
    sync(clients, prefix, first, first)
    assert person(fleet, tmp_path, prefix, "promote", "--wave", "rest", "--revision", "r1").returncode == 0
    assert sync(clients, prefix, first, first).outcome is RolloutOutcome.APPLIED
    assert labels(clients, prefix) == dict.fromkeys(clients, "r1")

    second = repo.write_documents("r2", [repo.namespace({"rev": "r2"})])
    waiting = sync(clients, prefix, second, first)
    assert waiting.outcome is RolloutOutcome.WAITING, waiting
    now = states(clients, prefix)
    assert (now["canary"].revision, now["canary"].last_good) == ("r2", "r2"), "the canary wave passed"
    assert now["eu-1"].awaiting.revision == "r2"

    aborted = person(fleet, tmp_path, prefix, "abort", "--reason", "latency")
    assert aborted.returncode == 0, aborted.stderr
    report = sync(clients, prefix, second, first)
    assert report.outcome is RolloutOutcome.HALTED, report
    assert [(w.name, w.decision.value) for w in report.waves] == [("canary", "rollback"), ("rest", "halt")]
    assert labels(clients, prefix) == dict.fromkeys(clients, "r1")
    now = states(clients, prefix)
    assert (now["canary"].revision, now["canary"].phase, now["canary"].last_good) == (
        "r1",
        SyncPhase.ROLLED_BACK,
        "r1",
    )
    assert "r2" in now["canary"].bad_revisions

    # A restart: new rollouts read the clusters again, pass after pass. Nothing takes r2, and no
    # cluster records it as last good.
    for _ in range(2):
        again = sync(clients, prefix, second, first)
        assert again.outcome is RolloutOutcome.HALTED, again
        assert labels(clients, prefix) == dict.fromkeys(clients, "r1")
        assert {n: s.last_good for n, s in states(clients, prefix).items()} == dict.fromkeys(clients, "r1")
