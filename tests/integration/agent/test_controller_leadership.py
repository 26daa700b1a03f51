"""The embedded controllers of ``syncer run --controller-every-cluster`` follow their agent's
leadership, tried with two real agent processes on the real fleet and judged by what the apiservers
audited: while one agent leads, only its controllers write; an agent frozen (SIGSTOP) past its Lease
and resumed (SIGCONT) has its controllers write nothing more once the other agent took over, and
they act again when it leads again. Replicas of a shard group write each cluster through the
controller of the replica that owns it, and the survivor's controllers take a dead replica's
clusters over with them."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime

import pytest
import yaml

from devfleet import audit
from syncer.errors import NotFound
from syncer.leader.election import LEASE_API
from syncer.leader.shards import OWNER_LEASE
from tests.integration.agent.drills import lease_flags, no_traceback
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.agent.test_agent_process import ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

CONTROLLER = "syncer-controller/"


def _controller_writes(rig: Rig, since: datetime) -> list[audit.AuditedWrite]:
    """Every write a controller made to any cluster of the fleet since ``since`` (dry runs left out)."""
    return [
        w
        for name in rig.clients
        for w in audit.writes(rig.fleet.state, name)
        if w.user_agent.startswith(CONTROLLER) and w.at >= since and not w.dry_run
    ]


def _identity(proc: AgentProc) -> str:
    acquired = proc.said("acquired lease ")
    return acquired[-1].rsplit(" as ", 1)[1] if acquired else ""


def _role(proc: AgentProc) -> str:
    return proc.get("/readyz")[1].split(";")[0]


def _own_cache(rig: Rig, args: list[str], name: str) -> list[str]:
    """``args`` with a config of its own whose source cache is ``cache-<name>``: an agent frozen
    mid-poll holds its cache folder, as each replica's pod has its own."""
    config = yaml.safe_load((rig.root / "agent.yaml").read_text())
    config["source"]["cacheDir"] = str(rig.root / f"cache-{name}")
    path = rig.root / f"agent-{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return [str(path) if arg == str(rig.root / "agent.yaml") else arg for arg in args]


@pytest.mark.slow
def test_a_frozen_agents_controllers_write_nothing_once_the_other_agent_took_over(
    rig: Rig, agents: Agents
) -> None:
    # No controllers of the rig's own: the agents' embedded ones make the RedisClusters Ready.
    args = [*lease_flags(rig, "canary"), "--controller-every-cluster", "--watch-namespace", rig.namespace]
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        a = agents.start("a", _own_cache(rig, rig.args("two-waves.yaml", *args), "a"))
        eventually("a to lead", lambda: _role(a) == "leader", 30)
        b = agents.start("b", _own_cache(rig, rig.args("two-waves.yaml", *args), "b"))
        eventually("b to stand by", lambda: _role(b) == "standby", 30)
        eventually("every cluster healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)

        a.send(signal.SIGSTOP)
        frozen_at = datetime.now(UTC)
        try:
            second = rig.commit("newer redis", "7.2.5")
            eventually("b to lead", lambda: _role(b) == "leader", 30)
            # a is still frozen: whatever its controllers write from here on comes after the takeover.
            taken = datetime.now(UTC)
            eventually("every cluster on the second", lambda: rig.all_healthy(second), ROLLOUT_TIMEOUT)
        finally:
            a.send(signal.SIGCONT)
        resumed = datetime.now(UTC)
        eventually("a to stand by", lambda: _role(a) == "standby", 30)
        # More work for the controllers while a runs again: a third revision, and time to act on it.
        third = rig.commit("newest redis", "7.2.6")
        eventually("every cluster on the third revision", lambda: rig.all_healthy(third), ROLLOUT_TIMEOUT)
        time.sleep(5)

        # What wrote while a was frozen is b's; any other controller writing after the takeover is a's.
        after = _controller_writes(rig, taken)
        b_writers = {w.user_agent for w in after if w.at < resumed}
        assert b_writers, "b's controllers wrote nothing while a was frozen"
        deposed = [
            (w.at.isoformat(), w.verb, w.resource, w.name, w.user_agent)
            for w in after
            if w.user_agent not in b_writers
        ]
        assert deposed == [], f"{len(deposed)} write(s) by the frozen agent's controllers after the takeover"
        # The controllers' requests name their agent: b's alone wrote since, a's wrote while it led.
        a_id, b_id = _identity(a), _identity(b)
        assert b_writers == {f"{CONTROLLER}{b_id}"}, b_writers
        since_start = _controller_writes(rig, datetime.min.replace(tzinfo=UTC))
        before = {w.user_agent for w in since_start if w.at < frozen_at}
        assert f"{CONTROLLER}{a_id}" in before, before
        assert f"{CONTROLLER}{b_id}" not in before, "b's controllers wrote while b stood by"

        # a leads again once b is gone: its controllers act again (nothing else makes the clusters Ready).
        b.kill()
        fourth = rig.commit("redis once more", "7.2.7")
        eventually("a to lead again", lambda: _role(a) == "leader", 30)
        eventually("every cluster on the fourth revision", lambda: rig.all_healthy(fourth), ROLLOUT_TIMEOUT)
        assert f"{CONTROLLER}{a_id}" in {w.user_agent for w in _controller_writes(rig, resumed)}
        no_traceback(a, b)


def _owners(rig: Rig) -> dict[str, str]:
    """Each cluster's owner Lease holder ("" when none)."""
    found = {}
    for name, client in rig.clients.items():
        try:
            lease = client.get(LEASE_API, "Lease", OWNER_LEASE, rig.state_namespace)
        except NotFound:
            found[name] = ""
            continue
        found[name] = str((lease.get("spec") or {}).get("holderIdentity") or "")
    return found


def _writers(rig: Rig, since: datetime) -> dict[str, set[str]]:
    """The agents whose controllers wrote to each cluster since ``since``."""
    return {
        name: {
            w.user_agent.removeprefix(CONTROLLER)
            for w in audit.writes(rig.fleet.state, name)
            if w.user_agent.startswith(CONTROLLER) and w.at >= since and not w.dry_run
        }
        for name in rig.clients
    }


@pytest.mark.slow
def test_the_controllers_of_sharded_replicas_write_only_the_clusters_their_replica_owns(
    rig: Rig, agents: Agents
) -> None:
    group = f"g-{rig.namespace[-6:]}"
    args = [*lease_flags(rig, "canary"), "--controller-every-cluster", "--watch-namespace", rig.namespace]
    args += ["--shard-group", group]
    with agents.shown_on_failure():
        replicas = {
            name: agents.start(name, rig.args("two-waves.yaml", *args, "--shard-identity", name))
            for name in ("a", "b")
        }

        def shared() -> dict[str, str] | None:
            owners = _owners(rig)
            return owners if set(owners.values()) == set(replicas) else None

        owners = eventually("each replica to own a share of the clusters", shared, 60)
        started = datetime.now(UTC)
        first = rig.commit("sessions cache", "7.2.4")
        eventually("every cluster healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)
        assert _owners(rig) == owners
        # Each cluster's RedisCluster was made Ready by its owner's controller alone.
        assert _writers(rig, started) == {name: {owner} for name, owner in owners.items()}

        # The owner of the canary dies: the survivor takes its clusters, and its controllers with them.
        victim = owners["canary"]
        survivor = next(name for name in replicas if name != victim)
        replicas[victim].kill()
        killed = datetime.now(UTC)
        eventually("the survivor to own every cluster", lambda: set(_owners(rig).values()) == {survivor}, 60)
        second = rig.commit("newer redis", "7.2.5")
        eventually("every cluster healthy again", lambda: rig.all_healthy(second), ROLLOUT_TIMEOUT)
        assert _writers(rig, killed) == {name: {survivor} for name in rig.clients}
        no_traceback(replicas[survivor])
