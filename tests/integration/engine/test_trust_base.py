"""A recorded revision is a base only once it verifies: forged sync states on the real fleet.

The agent (in process, wired as ``syncer run`` wires it) judges tips of a real git remote signed
with real ssh-keygen keys, against the revisions the three clusters' sync-state ConfigMaps record.
Someone who can write those ConfigMaps writes commit ids into them, as ``kubectl`` would; what the
clusters then run, record and are told is read back from them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.domain.progress import Step
from syncer.engine.revision import Stage
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from tests.integration.agent.test_agent_e2e import Setup, states
from tests.integration.conftest import FleetHandle
from tests.integration.verify.kit import Keys, SshKey, write_policy
from tests.support.namespaces import delete_namespaces
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

CLUSTERS = ("canary", "eu-1", "us-1")
NAMES = ("evil", "notes", "a", "b", "c", "alone")


@pytest.fixture
def setup(fleet: FleetHandle, namespace: str, tmp_path: Path, ops_key: SshKey) -> Iterator[Setup]:
    """The e2e setup without controllers: its objects are Namespaces, healthy once they exist."""
    made = Setup(tmp_path, fleet, ops_key, f"{namespace}-tb")
    try:
        yield made
    finally:
        made.agent.close()
        clients = [ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in fleet.names]
        extra = [f"{made.namespace}-{name}" for name in NAMES]
        delete_namespaces(clients, made.namespace, made.settings.state_namespace, *extra)
        for client in clients:
            client.close()


def extra_namespace(setup: Setup, name: str, value: str) -> dict[str, Any]:
    """A Namespace ``<test namespace>-<name>`` labelled with ``value`` (one of ``NAMES``)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": f"{setup.namespace}-{name}", "labels": {"value": value}},
    }


def restart_with(
    setup: Setup, tmp_path: Path, *, signers: list[dict[str, object]], extra: dict[str, Any] | None = None
) -> None:
    """The agent restarted with a strict trust policy of ``signers`` (and ``extra`` keys)."""
    policy = write_policy(tmp_path / "trust.yaml", signers=signers, keys=[], mode="strict")
    data = yaml.safe_load(policy.read_text())
    policy.write_text(yaml.safe_dump({**data, **(extra or {})}))
    setup.restart(tmp_path / "agent.yaml")


def forge(setup: Setup, cluster: str, revision: str) -> None:
    """Write ``revision`` into ``cluster``'s sync-state ConfigMap as applied and last good."""
    client = setup.agent.clients[cluster]
    store = StateStore(client, setup.settings.state_namespace)
    store.save(replace(store.load().state, revision=revision, last_good=revision))


def live_extra_namespaces(setup: Setup) -> dict[str, set[str]]:
    """Per cluster, which of the test's extra Namespaces exist."""
    found: dict[str, set[str]] = {}
    for cluster, client in setup.agent.clients.items():
        names = {i["metadata"]["name"] for i in client.list("v1", "Namespace").items}
        found[cluster] = {n for n in NAMES if f"{setup.namespace}-{n}" in names}
    return found


def synced(setup: Setup) -> str:
    result = setup.agent.sync_once()
    assert result.advance.rejection is None, result.advance.rejection
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    return result.report.revision


def ignored_bases(setup: Setup) -> dict[str, str]:
    return {e.revision: e.detail for e in setup.steps if e.step is Step.BASE_IGNORED}


def test_a_forged_record_of_an_unsigned_commit_does_not_narrow_strict_mode(
    setup: Setup, tmp_path: Path, ops_key: SshKey
) -> None:
    restart_with(setup, tmp_path, signers=[{"name": "ops", "ssh": ops_key.public_line}])
    start = setup.commit("signed start", [])
    assert synced(setup) == start
    unsigned = setup.commit("unsigned change", [extra_namespace(setup, "evil", "1")], signed=False)
    forged = setup.commit("unsigned, recorded by hand", [extra_namespace(setup, "evil", "2")], signed=False)
    tip = setup.commit(
        "signed tip", [extra_namespace(setup, "evil", "2"), extra_namespace(setup, "notes", "n")]
    )
    forge(setup, "canary", forged)

    result = setup.agent.sync_once()
    rejection = result.advance.rejection
    assert rejection is not None, "the tip was taken: strict mode judged it from the forged record"
    assert (rejection.stage, rejection.revision) == (Stage.VERIFY, tip)
    assert f"commit {unsigned[:12]} ('unsigned change') is not trusted: unsigned" in str(rejection.error)
    assert "the revision canary record(s) as applied" in ignored_bases(setup)[forged]
    assert f"it does not verify itself: revision {forged} is not trusted" in ignored_bases(setup)[forged]
    canary = setup.agent.clients["canary"]
    notes = eventually(
        "an UnverifiedBaseIgnored Event in the canary",
        lambda: [
            e["note"]
            for e in canary.list("events.k8s.io/v1", "Event", namespace=setup.settings.state_namespace).items
            if e["reason"] == "UnverifiedBaseIgnored"
        ],
        30,
    )
    assert forged[:12] in notes[0]

    # Every record forged, and a new replica with an empty cache: still judged from the root.
    for cluster in CLUSTERS:
        forge(setup, cluster, forged)
    config = yaml.safe_load((tmp_path / "agent.yaml").read_text())
    config["source"]["cacheDir"] = str(tmp_path / "fresh-cache")
    (tmp_path / "fresh.yaml").write_text(yaml.safe_dump(config))
    setup.restart(tmp_path / "fresh.yaml")
    again = setup.agent.sync_once().advance.rejection
    assert again is not None
    assert again.revision == tip
    assert f"commit {unsigned[:12]} ('unsigned change') is not trusted: unsigned" in str(again.error)

    assert live_extra_namespaces(setup) == {key: set() for key in CLUSTERS}
    assert {n: s.revision for n, s in states(setup).items()} == dict.fromkeys(CLUSTERS, forged)


def test_clusters_recording_different_revisions_give_their_common_ancestor_as_the_base(
    setup: Setup, tmp_path: Path, ops_key: SshKey
) -> None:
    restart_with(setup, tmp_path, signers=[{"name": "ops", "ssh": ops_key.public_line}])
    setup.commit("signed start", [])
    synced(setup)
    older = setup.commit("older", [extra_namespace(setup, "a", "1")])
    newer = setup.commit("newer", [extra_namespace(setup, "a", "1"), extra_namespace(setup, "b", "1")])
    maps = [extra_namespace(setup, name, "1") for name in ("a", "b", "c")]
    tip = setup.commit("tip", maps)
    forge(setup, "canary", newer)
    forge(setup, "eu-1", older)
    forge(setup, "us-1", older)

    advance = setup.agent.gate.advance()
    assert advance.rejection is None, advance.rejection
    assert advance.current is not None
    assert (advance.current.revision, advance.current.verification.since) == (tip, older)
    assert [c.commit for c in advance.current.verification.commits] == [newer, tip]


def test_a_recorded_commit_the_repository_does_not_hold_is_ignored_and_told_on_its_cluster(
    setup: Setup, tmp_path: Path, ops_key: SshKey
) -> None:
    signers: list[dict[str, object]] = [{"name": "ops", "ssh": ops_key.public_line}]
    restart_with(setup, tmp_path, signers=signers, extra={"allowHistoryRewrite": True})
    start = setup.commit("signed start", [])
    synced(setup)
    tip = setup.commit("tip", [extra_namespace(setup, "a", "1")])
    missing = "0123456789abcdef0123456789abcdef01234567"
    forge(setup, "eu-1", missing)

    result = setup.agent.sync_once()
    assert result.advance.rejection is None, result.advance.rejection
    assert result.advance.current is not None
    assert (result.advance.current.revision, result.advance.current.verification.since) == (tip, start)
    # Not a base, nor a bound of the history: told on the cluster that records it, which takes the tip.
    assert ignored_bases(setup) == {}
    told = [e for e in setup.steps if e.step is Step.RECORD_UNKNOWN]
    assert [(e.cluster, e.revision) for e in told] == [("eu-1", missing)]
    assert told[0].detail.startswith(f"records unknown commit {missing[:12]} (not in the repository; ")
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert live_extra_namespaces(setup) == {key: {"a"} for key in CLUSTERS}


def test_a_forged_record_does_not_narrow_the_two_person_rule(
    setup: Setup, tmp_path: Path, ops_key: SshKey
) -> None:
    keys = Keys(tmp_path / "keys")
    alice = keys.ssh("alice")
    signers: list[dict[str, object]] = [
        {"name": "ops", "ssh": ops_key.public_line},
        {"name": "alice", "ssh": alice.public_line},
    ]
    start = setup.commit("signed start", [])
    rule = [{"name": "objects", "paths": ["base/**"], "signers": 2}]
    restart_with(setup, tmp_path, signers=signers, extra={"twoPersonRules": rule, "since": start})
    assert synced(setup) == start
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": setup.namespace}},
        extra_namespace(setup, "alone", "1"),
    ]
    alone = setup.work.commit("one signer", {"base/objects.yaml": yaml.safe_dump_all(docs)}, sign=alice)
    tip = setup.work.commit("notes", {"notes/n.txt": "n\n"}, sign=alice)
    setup.work.git("push", "-q", str(setup.remote), "main")
    forge(setup, "canary", alone)

    result = setup.agent.sync_once()
    rejection = result.advance.rejection
    assert rejection is not None, "the tip was taken: the two-person rule was judged from the forged record"
    assert (rejection.stage, rejection.revision) == (Stage.VERIFY, tip)
    assert "two-person rule objects: the revision changes base/objects.yaml" in str(rejection.error)
    assert "found 1 (alice)" in str(rejection.error)
    assert live_extra_namespaces(setup) == {key: set() for key in CLUSTERS}
    keys.close()
