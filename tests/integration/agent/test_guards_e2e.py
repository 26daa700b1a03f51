"""Guard policies end to end on the real fleet: the shipped rules judge each new tip as the sync would
apply it (live object as ``old``), reject a breaking revision whole before any cluster changes, keep
judging that way after the agent restarts, let a revision that keeps the rules roll out, and judge
the last good revision a failed wave would go back to as well."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from syncer.config.rollout import load_rollout_policy
from syncer.domain.progress import Step
from syncer.domain.sync_state import SyncPhase
from syncer.engine.revision import Stage
from syncer.errors import GuardRejected
from syncer.rollout.moves import RolloutOutcome
from tests.integration.agent.test_agent_e2e import Setup, redis_cluster, states
from tests.integration.agent.test_agent_e2e import setup as e2e_setup

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[3]
RC = ("redis.syncer.dev/v1alpha1", "RedisCluster", "sessions")

setup = e2e_setup


@pytest.fixture
def guarded(setup: Setup, tmp_path: Path) -> Setup:
    """The e2e setup with the shipped guard policy (policies/guards.yaml) named in agent.yaml."""
    shutil.copy(REPO_ROOT / "policies" / "guards.yaml", tmp_path / "guards.yaml")
    config = yaml.safe_load((tmp_path / "agent.yaml").read_text())
    config["guardPolicy"] = "guards.yaml"
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    setup.restart(tmp_path / "agent.yaml")
    return setup


def live_versions(setup: Setup) -> dict[str, str]:
    return {
        name: client.get(RC[0], RC[1], RC[2], setup.namespace)["spec"]["version"]
        for name, client in setup.agent.clients.items()
    }


def syncer_diff(setup: Setup, root: Path, output: str = "json") -> subprocess.CompletedProcess[str]:
    """``syncer diff`` of the remote's tip, as a reviewer runs it, with the agent's config."""
    command = [sys.executable, "-m", "syncer", "diff", "--repo", str(setup.remote), "--config"]
    command += [str(root / "agent.yaml"), "--state-namespace", setup.settings.state_namespace, "-o", output]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=os.environ.copy(), check=False
    )


def test_a_downgrade_is_rejected_before_any_cluster_changes_even_after_a_restart(
    guarded: Setup, tmp_path: Path
) -> None:
    first = guarded.commit("sessions on 7.2.5", [redis_cluster(guarded.namespace, "7.2.5")])
    result = guarded.agent.sync_once()
    assert result.advance.rejection is None, result.advance.rejection
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    before = states(guarded)

    # The agent restarts: its gate has no revision in force, the clusters are what it judges against.
    guarded.restart(tmp_path / "agent.yaml")
    down = guarded.commit("sessions on 7.2", [redis_cluster(guarded.namespace, "7.2")])

    # The reviewer's dry run says so first: exit 3, each cluster's verdict on the object.
    shown = syncer_diff(guarded, tmp_path)
    assert shown.returncode == 3, shown.stderr
    document = json.loads(shown.stdout)
    assert document["guards"]["rejected"] is True
    for cluster in (c for wave in document["waves"] for c in wave["clusters"]):
        rc = next(o for o in cluster["objects"] if o["kind"] == "RedisCluster")
        downgrade = next(v for v in rc["guards"] if v["rule"] == "no-redis-downgrade")
        assert downgrade["outcome"] == "fail", rc["guards"]
        assert downgrade["inputs"] == {"new.spec.version": '"7.2"', "old.spec.version": '"7.2.5"'}
    text = syncer_diff(guarded, tmp_path, "text")
    assert text.returncode == 3, text.stderr
    assert "✗ guard no-redis-downgrade fail: the Redis version must not go down" in text.stdout
    assert "REJECTED" in text.stdout

    result = guarded.agent.sync_once()
    rejection = result.advance.rejection
    assert rejection is not None
    assert (rejection.stage, rejection.revision) == (Stage.GUARDS, down)
    assert isinstance(rejection.error, GuardRejected)
    for cluster in ("canary", "eu-1", "us-1"):
        line = next(f for f in rejection.error.failures if f" on {cluster} " in f)
        assert line.startswith("rule no-redis-downgrade failed on "), line
        assert f"RedisCluster/{guarded.namespace}/sessions" in line
        assert 'old.spec.version="7.2.5"' in line, line
        assert 'new.spec.version="7.2"' in line, line
    # The revision in force stays: nothing was applied, no state moved, the event says why.
    assert result.report is None or result.report.revision == first
    assert live_versions(guarded) == {"canary": "7.2.5", "eu-1": "7.2.5", "us-1": "7.2.5"}
    assert {n: (s.revision, s.phase) for n, s in states(guarded).items()} == {
        n: (s.revision, s.phase) for n, s in before.items()
    }
    rejected = [e for e in guarded.steps if e.step is Step.REVISION_REJECTED]
    assert len(rejected) == 1
    assert "no-redis-downgrade" in rejected[0].error
    assert guarded.metrics.registry.get_sample_value("syncer_sync_total", {"result": "rejected"}) == 1

    # The same bad tip is not judged again; a tip that keeps the rules replaces it and rolls out.
    again = guarded.agent.sync_once()
    assert again.advance.rejection is rejection
    up = guarded.commit("sessions on 7.4.1", [redis_cluster(guarded.namespace, "7.4.1")])
    shown = syncer_diff(guarded, tmp_path)
    assert shown.returncode == 1, shown.stderr
    assert json.loads(shown.stdout)["guards"] == {
        "policy": str(tmp_path / "guards.yaml"),
        "judged": True,
        "rejected": False,
        "limits": [
            {"name": "at-most-200-objects", "outcome": "pass", "message": "3 objects in 3 clusters changed"}
        ],
    }
    result = guarded.agent.sync_once()
    assert result.advance.rejection is None, result.advance.rejection
    assert result.report is not None
    assert (result.report.outcome, result.report.revision) == (RolloutOutcome.APPLIED, up)
    assert live_versions(guarded) == {"canary": "7.4.1", "eu-1": "7.4.1", "us-1": "7.4.1"}


def test_a_jump_of_shards_and_an_unqualified_prod_version_are_each_named(guarded: Setup) -> None:
    guarded.commit("sessions", [redis_cluster(guarded.namespace, "7.2.5")])
    result = guarded.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    jump = redis_cluster(guarded.namespace, "7.2.6")
    jump["spec"]["shards"] = 3
    bad = guarded.commit("three shards at once on an unqualified version", [jump])
    result = guarded.agent.sync_once()
    rejection = result.advance.rejection
    assert rejection is not None
    assert (rejection.revision, rejection.stage) == (bad, Stage.GUARDS)
    assert isinstance(rejection.error, GuardRejected)
    failures = rejection.error.failures
    assert sum(f.startswith("rule shards-one-step failed on ") for f in failures) == 3, failures
    # allowed-versions is scoped to tier=prod: the canary is not judged by it.
    prod = sorted(f.split(" on ")[1].split()[0] for f in failures if f.startswith("rule allowed-versions"))
    assert prod == ["eu-1", "us-1"], failures
    assert live_versions(guarded) == {"canary": "7.2.5", "eu-1": "7.2.5", "us-1": "7.2.5"}


def test_a_rollback_the_guards_refuse_is_not_applied(guarded: Setup, tmp_path: Path) -> None:
    """A failed canary goes back to its last good revision only if the guards accept that revision
    too: going back from 7.4.1 to 7.2.5 lowers the Redis version, so the canary stays on 7.4.1."""
    rollout = yaml.safe_load((tmp_path / "rollout.yaml").read_text())
    rollout["defaults"]["healthTimeout"] = "10s"
    (tmp_path / "quick-rollout.yaml").write_text(yaml.safe_dump(rollout))
    guarded.restart(tmp_path / "agent.yaml", load_rollout_policy(tmp_path / "quick-rollout.yaml"))
    good = guarded.commit("sessions on 7.2.5", [redis_cluster(guarded.namespace, "7.2.5")])
    result = guarded.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    bad = guarded.commit("7.4.1, pods never ready", [redis_cluster(guarded.namespace, "7.4.1", hold=True)])

    result = guarded.agent.sync_once()
    assert result.advance.rejection is None, result.advance.rejection
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.HALTED, result.report
    assert f"canary: not rolled back: {good[:12]} cannot be rebuilt" in result.report.message
    assert live_versions(guarded) == {"canary": "7.4.1", "eu-1": "7.2.5", "us-1": "7.2.5"}
    unavailable = [e for e in guarded.steps if e.step is Step.LAST_GOOD_UNAVAILABLE]
    assert [e.revision for e in unavailable] == [good]
    assert "rule no-redis-downgrade failed on canary" in unavailable[0].error
    found = states(guarded)
    assert found["canary"].revision == bad
    assert found["canary"].phase is SyncPhase.FAILED
    assert found["canary"].bad_revisions == (bad,)
    assert {(found[n].revision, found[n].phase) for n in ("eu-1", "us-1")} == {(good, SyncPhase.HEALTHY)}


def test_a_revision_taken_up_again_during_a_git_outage_is_judged_by_the_guards(
    guarded: Setup, tmp_path: Path
) -> None:
    """An agent started while git is unreachable takes up the revision the clusters record only if
    the guards accept it against what is live: someone moved the canary to 7.4.1 by hand, and
    re-applying 7.2.5 there would be a downgrade, so nothing is taken up and nothing is repaired."""
    guarded.commit("sessions on 7.2.5", [redis_cluster(guarded.namespace, "7.2.5")])
    result = guarded.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    canary = guarded.agent.clients["canary"]
    live = canary.get(RC[0], RC[1], RC[2], guarded.namespace)
    live["spec"]["version"] = "7.4.1"
    canary.replace(live)
    guarded.remote.rename(guarded.remote.with_name("remote-away.git"))  # git is unreachable from here on

    guarded.restart(tmp_path / "agent.yaml")
    result = guarded.agent.sync_once()
    assert result.advance.rejection is not None
    assert result.advance.rejection.stage is Stage.SOURCE
    assert result.advance.current is None, "the recorded revision was taken up without the guards"
    assert guarded.agent.heal() == ()
    assert live_versions(guarded) == {"canary": "7.4.1", "eu-1": "7.2.5", "us-1": "7.2.5"}
