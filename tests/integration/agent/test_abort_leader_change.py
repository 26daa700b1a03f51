"""``syncer abort`` across a leader change, with two real ``syncer run`` replicas under leader election
on the real fleet: the canary had passed on the revision and the next wave waits at its manual gate.
The leader is frozen (SIGSTOP) before the abort, so the replica that takes over carries it out: the
canary goes back to the revision it ran healthy before, the aborted revision is never any cluster's
last good revision and no later wave takes it, neither when the frozen replica resumes (fenced out)
nor after the new leader dies and the first one leads again.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime

import pytest

from syncer.domain.sync_state import SyncPhase
from tests.integration.agent.drills import lease_flags, live_version, no_traceback, write_policy
from tests.integration.agent.procs import Agents, eventually
from tests.integration.agent.test_agent_process import ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.integration.agent.test_manual_gates_e2e import _policy
from tests.integration.agent.test_suspend_e2e import _rc_writes, _syncer

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures


@pytest.mark.slow
def test_an_abort_carried_out_by_the_next_leader_never_makes_the_aborted_revision_last_good(
    rig: Rig, agents: Agents
) -> None:
    policy = write_policy(rig, "gated-eu.yaml", _policy("eu", {}))
    rig.start_controllers()
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        a = agents.start("a", rig.args(policy, *lease_flags(rig, "canary")))
        eventually("a to lead", lambda: a.get("/readyz")[1].startswith("leader"), 30)
        b = agents.start("b", rig.args(policy, *lease_flags(rig, "canary")))
        eventually("b to stand by", lambda: b.get("/readyz")[1].startswith("standby"), 30)
        eventually(
            "the eu wave to wait", lambda: rig.states()["eu-1"].awaiting.revision == first, ROLLOUT_TIMEOUT
        )
        promoted = _syncer(rig, "promote", "--wave", "eu", "--revision", first, "--by", "alice")
        assert promoted.returncode == 0, promoted.stderr
        eventually("every cluster healthy", lambda: rig.all_healthy(first), 2 * ROLLOUT_TIMEOUT)

        since = datetime.now(UTC)
        second = rig.commit("sessions cache 7.2.5", "7.2.5")
        eventually(
            "the canary passed and the eu wave waiting on the second revision",
            lambda: (
                (s := rig.states())["eu-1"].awaiting.revision == second
                and (s["canary"].revision, s["canary"].phase) == (second, SyncPhase.HEALTHY)
            ),
            ROLLOUT_TIMEOUT,
        )
        assert rig.states()["canary"].last_good == second  # it passed there before the abort

        a.send(signal.SIGSTOP)
        try:
            aborted = _syncer(rig, "abort", "--by", "ops", "--reason", "latency on the canary")
            assert aborted.returncode == 0, aborted.stderr
            eventually("b to lead", lambda: b.get("/readyz")[1].startswith("leader"), 30)
            eventually(
                "the canary back on the first revision",
                lambda: (s := rig.states()["canary"]).revision == first and s.phase is SyncPhase.ROLLED_BACK,
                ROLLOUT_TIMEOUT,
            )
        finally:
            a.send(signal.SIGCONT)
        assert live_version(rig.clients["canary"], rig.namespace) == "7.2.4"
        assert [r.get("wave") for r in b.steps("rollout-aborted")][:1] == ["canary"]

        def settled() -> None:
            states = rig.states()
            for name, state in states.items():
                assert state.last_good == first, (name, state)
                assert state.revision == first, (name, state)
            assert second in states["canary"].bad_revisions
            for name in rig.clients:
                assert live_version(rig.clients[name], rig.namespace) == "7.2.4", name

        eventually("a to stand by", lambda: a.get("/readyz")[1].startswith("standby"), 30)
        passes = len(b.said("sync "))
        eventually("three more passes of b", lambda: len(b.said("sync ")) >= passes + 3, 60)
        settled()

        # The new leader dies: the first replica leads again, reads the clusters and keeps the abort.
        b.kill()
        eventually("a to lead again", lambda: a.get("/readyz")[1].startswith("leader"), 30)
        passes = len(a.said("sync "))
        eventually("three passes of a", lambda: len(a.said("sync ")) >= passes + 3, 60)
        settled()
        for name in ("eu-1", "us-1"):
            assert _rc_writes(rig, name, since) == [], f"{name} never takes the aborted revision"
        no_traceback(a)
