"""A manual gate with two sharded ``syncer run`` replicas: every owner records the wait in its clusters
of the gated wave and writes nothing else there; one ``syncer promote`` (written into the clusters,
not to either replica) lets both replicas roll the wave out, each cluster written by its owner only."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from devfleet import fleet as devfleet
from devfleet.standin import ReadyStatusStandIn
from tests.integration.agent.test_sharded_run import (
    ROLLOUT_TIMEOUT,
    Group,
    assert_single_writer,
    replica_of,
    waves,
)
from tests.integration.verify.kit import SshKey
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


@pytest.fixture
def gated(light: devfleet.Fleet, tmp_path: Path, ops_key: SshKey) -> Iterator[Group]:
    """The sharded group with a manual gate before its last wave."""
    made = Group(tmp_path, light, ops_key, canary_bake="0s")
    policy = waves("0s")
    policy["waves"][-1]["approval"] = "manual"  # type: ignore[index]
    (tmp_path / "waves.yaml").write_text(yaml.safe_dump(policy))
    try:
        yield made
    finally:
        made.close()


def test_sharded_replicas_wait_at_a_manual_gate_and_both_follow_one_promote(gated: Group) -> None:
    group = gated
    with group.agents.shown_on_failure():
        replicas = group.start_sharing("replica-a", "replica-b")
        with ReadyStatusStandIn(group.fleet.kubeconfig, list(group.clients)):
            revision = group.commit("caches", "7.2.5")

            def held() -> list[str]:
                return sorted(n for n, s in group.states().items() if s.awaiting.revision == revision)

            eventually(
                "the last wave's clusters to record the wait", lambda: len(held()) == 3, ROLLOUT_TIMEOUT
            )
            gated_clusters = held()
            owners = group.owners()
            assert {owners[n] for n in gated_clusters} == set(replicas), "both replicas hold gated clusters"
            states = group.states()
            assert all(states[n].revision != revision for n in gated_clusters)
            for name in gated_clusters:
                written = [
                    w
                    for w in group.writes(name)
                    if w.resource == "redisclusters" and w.namespace == group.namespace
                ]
                assert written == [], name
            promote = [sys.executable, "-m", "syncer", "promote", "--config", str(group.root / "agent.yaml")]
            promote += ["--state-namespace", group.state_namespace, "--wave", "all", "--revision", revision]
            done = subprocess.run(
                [*promote, "--by", "alice"], capture_output=True, text=True, timeout=120, check=False
            )
            assert done.returncode == 0, done.stderr
            eventually("every cluster healthy", lambda: group.all_healthy(revision), ROLLOUT_TIMEOUT)
        for name in gated_clusters:
            rc = [
                w
                for w in group.writes(name)
                if w.resource == "redisclusters" and w.namespace == group.namespace
            ]
            assert {replica_of(w) for w in rc} == {owners[name]}, name
    assert_single_writer(group)
