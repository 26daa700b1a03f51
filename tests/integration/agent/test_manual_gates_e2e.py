"""Manual gates with real ``syncer promote`` and ``syncer abort`` processes beside a real ``syncer run``
on the real fleet, judged by what the clusters hold and what their apiservers audited:

- a wave with ``approval: manual`` waits (typed step, Event, metric, ``syncer status``) with nothing
  written to its clusters; a promote naming another revision is refused; where a cluster two-person
  rule covers the wave, one person (even twice) is not enough, a second completes the rollout;
- an abort while the promoted wave bakes rolls its clusters back to their last good revision, the
  revision is remembered as failed there and later passes do not try it again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import yaml

from syncer.domain.sync_state import SyncPhase
from syncer.errors import NotFound
from tests.integration.agent.drills import event_notes, live_version, no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import (
    RC_API,
    ROLLOUT_TIMEOUT,
    Rig,
    agents,
    redis_cluster,
    rig,
)
from tests.integration.agent.test_suspend_e2e import _rc_writes, _syncer
from tests.integration.verify.kit import Keys, SshKey
from tests.integration.verify.kit import write_policy as write_trust
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


def _policy(gated: str, bake: dict[str, str]) -> dict[str, object]:
    """The three waves of the rig (canary, eu, us), ``gated`` with ``approval: manual``."""
    waves: list[dict[str, object]] = [
        {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
        {"name": "eu", "percent": 67, "selector": {"matchLabels": {"region": "eu"}}},
        {"name": "us", "percent": 100, "selector": {"matchLabels": {"region": "us"}}},
    ]
    for wave in waves:
        wave["bake"] = bake.get(str(wave["name"]), "1s")
        if wave["name"] == gated:
            wave["approval"] = "manual"
    return {"waves": waves, "defaults": {"maxConcurrent": 1, "healthTimeout": "60s"}, "rollback": True}


def _absent(rig: Rig, cluster: str) -> bool:
    try:
        rig.clients[cluster].get(RC_API, "RedisCluster", "sessions", rig.namespace)
    except NotFound:
        return True
    return False


def _awaits(agent_steps: list[dict[str, object]], text: str) -> bool:
    return any(text in str(r.get("detail")) for r in agent_steps)


@pytest.fixture
def approver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshKey]:
    with Keys(tmp_path_factory.mktemp("approver-keys")) as keys:
        yield keys.ssh("approver")


def _approved_commit(rig: Rig, approver: SshKey, message: str, version: str) -> str:
    """The sessions cache at ``version``, committed by ops on a branch and merged into main by the
    approver's signed merge (two signers, as the cluster two-person rule asks of the commits)."""
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rig.namespace}},
        redis_cluster(rig.namespace, version),
    ]
    work = rig.work
    work.git("checkout", "-q", "-b", "change")
    work.commit(message, {"base/objects.yaml": yaml.safe_dump_all(docs)}, sign=rig.key)
    work.git("checkout", "-q", "main")
    merged = work.merge("change", f"approve: {message}", sign=approver)
    work.git("branch", "-q", "-D", "change")
    work.git("push", "-q", str(rig.remote), "main")
    return merged


@pytest.mark.slow
def test_a_manual_gate_waits_unwritten_refuses_another_revision_and_needs_two_people(
    rig: Rig, agents: Agents, approver: SshKey
) -> None:
    signers: list[dict[str, object]] = [
        {"name": "ops", "ssh": rig.key.public_line},
        {"name": "approver", "ssh": approver.public_line},
    ]
    trust = write_trust(rig.root / "trust.yaml", signers=signers, keys=[])
    rule = {"name": "us", "clusters": {"matchLabels": {"region": "us"}}}
    trust.write_text(trust.read_text() + yaml.safe_dump({"twoPersonRules": [rule]}))
    policy = write_policy(rig, "gated-us.yaml", _policy("us", {}))
    rig.start_controllers()
    with agents.shown_on_failure():
        since = datetime.now(UTC)
        namespace = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rig.namespace}}]
        rig.work.commit("namespace", {"base/objects.yaml": yaml.safe_dump_all(namespace)}, sign=rig.key)
        revision = _approved_commit(rig, approver, "sessions cache", "7.2.4")
        agent = agents.start("agent", rig.args(policy, "--no-leader-elect"))
        eventually(
            "the us wave to wait for a promotion",
            lambda: _awaits(
                agent.steps("awaiting-promotion"), f"waiting for promote of {revision[:12]} at wave us"
            ),
            ROLLOUT_TIMEOUT,
        )
        states = rig.states()
        assert (states["eu-1"].revision, states["eu-1"].phase) == (revision, SyncPhase.HEALTHY)
        assert (states["us-1"].awaiting.wave, states["us-1"].awaiting.revision) == ("us", revision)
        gauge = f'syncer_wave_awaiting_approval{{revision="{revision}",wave="us"}}'
        assert agent.metrics().get(gauge) == 1.0
        assert any("us: waiting for promote of" in n for n in event_notes(rig, "AwaitingPromotion")["us-1"])
        status = _syncer(rig, "status")
        assert f"waiting for promote of {revision[:12]} at wave us" in status.stdout, status.stdout

        wrong = _syncer(rig, "promote", "--wave", "us", "--revision", "0123456789ab", "--by", "alice")
        assert wrong.returncode == 1, wrong.stderr
        assert f"refused: wave us waits for promote of {revision[:12]}, not 0123456789ab" in wrong.stderr
        assert "Traceback" not in wrong.stderr

        for _ in range(2):  # one person twice is still one person
            once = _syncer(rig, "promote", "--wave", "us", "--revision", revision[:10], "--by", "alice")
            assert once.returncode == 0, once.stderr
        eventually(
            "the wait to count one of two people",
            lambda: _awaits(agent.steps("awaiting-promotion"), "(1 of 2 distinct people: alice)"),
            60,
        )
        assert _absent(rig, "us-1")
        assert _rc_writes(rig, "us-1", since) == []

        second = _syncer(rig, "promote", "--wave", "us", "--revision", revision, "--by", "bob")
        assert second.returncode == 0, second.stderr
        assert "promoted at wave us by alice, bob" in second.stdout
        eventually("every cluster healthy", lambda: rig.all_healthy(revision), ROLLOUT_TIMEOUT)
        assert live_version(rig.clients["us-1"], rig.namespace) == "7.2.4"
        assert agent.metrics().get(gauge) == 0.0
        assert [r.get("detail") for r in agent.steps("promoted")] == ["promoted by alice, bob"]
        no_traceback(agent)


@pytest.mark.slow
def test_an_abort_mid_wave_rolls_the_wave_back_and_the_revision_is_not_tried_again(
    rig: Rig, agents: Agents
) -> None:
    # The eu wave waits for a person, then bakes long enough for the abort to land while it does. The
    # first revision, the one to go back to, is rolled out by an agent whose eu wave bakes briefly.
    brief = write_policy(rig, "gated-eu-brief.yaml", _policy("eu", {}))
    policy = write_policy(rig, "gated-eu.yaml", _policy("eu", {"eu": "40s"}))
    rig.start_controllers()
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        before = agents.start("before", rig.args(brief, "--no-leader-elect"))
        eventually(
            "the eu wave to wait", lambda: rig.states()["eu-1"].awaiting.revision == first, ROLLOUT_TIMEOUT
        )
        done = _syncer(rig, "promote", "--wave", "eu", "--revision", first, "--by", "alice")
        assert done.returncode == 0, done.stderr
        eventually("every cluster healthy", lambda: rig.all_healthy(first), 2 * ROLLOUT_TIMEOUT)
        no_traceback(before)
        before.kill()

        agent = agents.start("agent", rig.args(policy, "--no-leader-elect"))
        second = rig.commit("sessions cache 7.2.5", "7.2.5")
        eventually(
            "the eu wave to wait again",
            lambda: rig.states()["eu-1"].awaiting.revision == second,
            ROLLOUT_TIMEOUT,
        )
        done = _syncer(rig, "promote", "--wave", "eu", "--revision", second, "--by", "alice")
        assert done.returncode == 0, done.stderr
        eventually(
            "eu-1 applied and baking",
            lambda: (s := rig.states()["eu-1"]).revision == second and s.phase is SyncPhase.APPLIED,
            ROLLOUT_TIMEOUT,
        )
        since = datetime.now(UTC)
        aborted = _syncer(rig, "abort", "--by", "ops", "--reason", "latency on eu")
        assert aborted.returncode == 0, aborted.stderr
        assert f"eu-1: {second[:12]} aborted by ops: latency on eu" in aborted.stdout

        eventually(
            "eu-1 rolled back",
            lambda: (s := rig.states()["eu-1"]).revision == first and s.phase is SyncPhase.ROLLED_BACK,
            ROLLOUT_TIMEOUT,
        )
        assert live_version(rig.clients["eu-1"], rig.namespace) == "7.2.4"
        recorded = rig.states()["eu-1"]
        assert second in recorded.bad_revisions
        assert "aborted by ops" in recorded.failures[-1].reason
        assert [r.get("wave") for r in agent.steps("rollout-aborted")][:1] == ["eu"]

        # Pass after pass the revision is refused at the eu wave: nothing more is applied there, and
        # us-1 never gets it.
        applying = [r for r in agent.steps("applying") if r.get("cluster") == "eu-1"]
        rolled_back_at = rig.states()["eu-1"].applied_at
        passes = len(agent.said("sync "))
        eventually("three more passes", lambda: len(agent.said("sync ")) >= passes + 3, 60)
        assert [r for r in agent.steps("applying") if r.get("cluster") == "eu-1"] == applying
        assert rig.states()["eu-1"].applied_at == rolled_back_at
        assert live_version(rig.clients["eu-1"], rig.namespace) == "7.2.4"
        assert live_version(rig.clients["us-1"], rig.namespace) == "7.2.4"
        assert _rc_writes(rig, "us-1", since) == []
        rows = {r["cluster"]: r for r in json.loads(_syncer(rig, "status", "-o", "json").stdout)["clusters"]}
        assert rows["eu-1"]["aborted"]["by"] == "ops"
        no_traceback(agent)
