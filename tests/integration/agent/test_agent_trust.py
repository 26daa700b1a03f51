"""The fleet's memory against a replica that has none: ``syncer run`` processes on the real fleet.

A first agent rolls revision A and then B out to every cluster and is killed. A new replica with an
empty cache joins the fleet, whose clusters record B. It refuses (a) the branch force-pushed back to
the older signed revision A, and (b) a tip signed by a path-limited signer on top of B over unsigned
changes outside that signer's paths. Both refusals are RevisionRejected Events in every cluster and
``syncer_sync_total{result="rejected"}``, and every cluster keeps running B.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.agent.drills import event_notes
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import CLUSTERS, RC_API, ROLLOUT_TIMEOUT, Rig
from tests.integration.conftest import FleetHandle
from tests.integration.verify.kit import Keys, SshKey, write_policy
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

SINGLE_WAVE = {"waves": [{"name": "all", "percent": 100}], "defaults": {"bake": "1s", "healthTimeout": "60s"}}
NOTES_SCOPE = "notes/**"


@pytest.fixture
def trust_rig(
    fleet: FleetHandle, namespace: str, tmp_path: Path, ops_key: SshKey, crd_installed: None
) -> Iterator[Rig]:
    made = Rig(tmp_path, fleet, ops_key, f"{namespace}-t")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def trust_agents(tmp_path: Path, trust_rig: Rig) -> Iterator[Agents]:
    procs = Agents(tmp_path)
    try:
        yield procs
    finally:
        procs.close()


def events_saying(rig: Rig, text: str) -> dict[str, list[str]] | None:
    found = event_notes(rig, "RevisionRejected")
    if all(any(text in note for note in notes) for notes in found.values()):
        return found
    return None


def test_a_replica_with_an_empty_cache_refuses_a_rollback_and_an_out_of_scope_tip_the_fleet_moved_past(
    trust_rig: Rig, trust_agents: Agents, tmp_path: Path
) -> None:
    rig, agents = trust_rig, trust_agents
    keys = Keys(tmp_path / "keys")
    notes_key = keys.ssh("notes-writers")
    write_policy(
        rig.root / "trust.yaml",
        signers=[
            {"name": "ops", "ssh": rig.key.public_line},
            {"name": "notes-writers", "ssh": notes_key.public_line, "paths": [NOTES_SCOPE]},
        ],
        keys=[],
    )
    (rig.root / "single-wave.yaml").write_text(yaml.safe_dump(SINGLE_WAVE))
    config = yaml.safe_load((rig.root / "agent.yaml").read_text())
    config["source"]["cacheDir"] = str(rig.root / "fresh-cache")
    (rig.root / "fresh.yaml").write_text(yaml.safe_dump(config))
    rig.start_controllers()
    with agents.shown_on_failure():
        a = rig.commit("sessions cache", "7.2.4")
        first = agents.start("first", rig.args("single-wave.yaml", "--no-leader-elect"))
        eventually("every cluster healthy at A", lambda: rig.all_healthy(a), ROLLOUT_TIMEOUT)
        b = rig.commit("newer redis", "7.2.5")
        eventually("every cluster healthy at B", lambda: rig.all_healthy(b), ROLLOUT_TIMEOUT)
        first.kill()

        # (a) The branch is force-pushed back to the older signed revision A.
        rig.work.git("reset", "-q", "--hard", a)
        rig.work.git("push", "-q", "--force", str(rig.remote), "main")
        args = rig.args("single-wave.yaml", "--no-leader-elect")
        args[args.index(str(rig.root / "agent.yaml"))] = str(rig.root / "fresh.yaml")
        fresh = agents.start("fresh", args)
        rollback = f"does not descend from the revision {', '.join(CLUSTERS)} record(s) as applied {b}"
        eventually("RevisionRejected events for the rollback", lambda: events_saying(rig, rollback), 60)
        assert fresh.metrics()['syncer_sync_total{result="rejected"}'] == 1
        assert any(
            str(r.get("detail", "")).startswith(
                f"revision {a[:12]} rejected by verify: history of branch 'main'"
            )
            for r in fresh.steps("revision-rejected")
        )
        assert not (rig.root / "fresh-cache" / "checkouts").exists() or not list(
            (rig.root / "fresh-cache" / "checkouts").iterdir()
        )

        # (b) On top of B: an unsigned change outside the notes/ scope, under a tip the notes signer signed.
        rig.work.git("reset", "-q", "--hard", b)
        objects = yaml.safe_load_all((rig.work.path / "base" / "objects.yaml").read_text())
        docs = list(objects)
        docs[1]["spec"]["version"] = "7.2.6"
        rig.work.commit("unsigned version bump", {"base/objects.yaml": yaml.safe_dump_all(docs)})
        tip = rig.work.commit("notes", {"notes/release.txt": "7.2.6\n"}, sign=notes_key)
        rig.work.git("push", "-q", "--force", str(rig.remote), "main")
        scope = f"signer 'notes-writers' may change only {NOTES_SCOPE}, but this changes base/objects.yaml"
        eventually("RevisionRejected events for the scoped tip", lambda: events_saying(rig, scope), 60)
        assert fresh.metrics()['syncer_sync_total{result="rejected"}'] == 2
        assert any(
            str(r.get("detail", "")).startswith(f"revision {tip[:12]} rejected by verify")
            for r in fresh.steps("revision-rejected")
        )

        # Nothing was applied: every cluster still records and runs B.
        states = rig.states()
        assert {n: s.revision for n, s in states.items()} == dict.fromkeys(CLUSTERS, b)
        for name, client in rig.clients.items():
            live = client.get(RC_API, "RedisCluster", "sessions", rig.namespace)
            assert live["spec"]["version"] == "7.2.5", name
        assert fresh.steps("applying") == []
    keys.close()


def test_a_tip_holding_a_5000_digit_integer_is_rejected_with_events_and_every_cluster_keeps_its_revision(
    trust_rig: Rig, trust_agents: Agents
) -> None:
    rig, agents = trust_rig, trust_agents
    (rig.root / "single-wave.yaml").write_text(yaml.safe_dump(SINGLE_WAVE))
    rig.start_controllers()
    with agents.shown_on_failure():
        good = rig.commit("sessions cache", "7.2.4")
        agent = agents.start("agent", rig.args("single-wave.yaml", "--no-leader-elect"))
        eventually(
            "every cluster healthy at the good revision", lambda: rig.all_healthy(good), ROLLOUT_TIMEOUT
        )
        objects = (rig.work.path / "base" / "objects.yaml").read_text()
        huge = objects.replace("shards: 1\n", "shards: " + "9" * 5000 + "\n", 1)
        assert huge != objects
        bad = rig.work.commit("shards beyond any integer", {"base/objects.yaml": huge}, sign=rig.key)
        rig.work.git("push", "-q", str(rig.remote), "main")

        said = "yaml-value: integer 99999999999999999999... (5000 characters) is outside the 64-bit range"
        eventually("RevisionRejected events for the huge integer", lambda: events_saying(rig, said), 60)
        # The pass is counted once it has returned, which may be a moment after its Event.
        rejected = 'syncer_sync_total{result="rejected"}'
        eventually("the rejection counted", lambda: agent.metrics().get(rejected), 30)
        assert agent.metrics()[rejected] == 1
        assert any(
            str(r.get("detail", "")).startswith(f"revision {bad[:12]} rejected by manifests")
            for r in agent.steps("revision-rejected")
        )
        assert agent.running()
        states = rig.states()
        assert {n: s.revision for n, s in states.items()} == dict.fromkeys(CLUSTERS, good)
        for name, client in rig.clients.items():
            live = client.get(RC_API, "RedisCluster", "sessions", rig.namespace)
            assert live["spec"]["shards"] == 1, name
