"""The two-person rule keyed on clusters, end to end on the real fleet: a change that reaches a cluster
labelled tier=prod needs two signers, wherever in the repository it was made; a change that reaches
only the canary needs one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.integration.agent.test_agent_e2e import Setup, redis_cluster
from tests.integration.agent.test_agent_e2e import setup as e2e_setup
from tests.integration.agent.test_two_person_e2e import (
    approved_over,
    pushed_by_one,
    sync_refuses,
    sync_rolls_out,
    with_two_person_rule,
)
from tests.integration.agent.test_two_person_e2e import approver as approver_key
from tests.integration.verify.kit import SshKey

pytestmark = pytest.mark.integration

RC = ("redis.syncer.dev/v1alpha1", "RedisCluster")
setup = e2e_setup
approver = approver_key


@pytest.fixture
def guarded(setup: Setup, approver: SshKey, tmp_path: Path) -> Setup:
    """The e2e setup with two signers and a two-person rule on the clusters labelled tier=prod."""
    rule: dict[str, object] = {"name": "prod", "clusters": {"matchLabels": {"tier": "prod"}}}
    return with_two_person_rule(setup, approver, tmp_path, rule)


def approved_push(setup: Setup, approver: SshKey, message: str, files: dict[str, str]) -> str:
    """``files`` committed by ops on a branch, merged into main by the approver's signed merge."""
    work = setup.work
    work.git("checkout", "-q", "-b", "change")
    work.commit(message, files, sign=setup.key)
    work.git("checkout", "-q", "main")
    merged = work.merge("change", f"approve: {message}", sign=approver)
    work.git("branch", "-q", "-D", "change")
    work.git("push", "-q", str(setup.remote), "main")
    return merged


def objects(setup: Setup, version: str) -> str:
    docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": setup.namespace}}]
    return yaml.safe_dump_all([*docs, redis_cluster(setup.namespace, version)])


def test_changes_reaching_prod_clusters_need_two_signers_wherever_they_are_made(
    guarded: Setup, approver: SshKey
) -> None:
    # The first revision reaches every cluster: it needs both signers (judged over the whole history).
    namespace = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": guarded.namespace}}]
    guarded.work.commit("namespace", {"base/objects.yaml": yaml.safe_dump_all(namespace)}, sign=guarded.key)
    first = approved_push(guarded, approver, "sessions", {"base/objects.yaml": objects(guarded, "7.2.4")})
    sync_rolls_out(guarded, first)

    # One signer, a change only the canary receives (its own folder): accepted.
    canary = guarded.work.commit(
        "canary on 7.2.5",
        {"clusters/canary/patches.yaml": yaml.safe_dump(_version_patch(guarded, "7.2.5"))},
        sign=guarded.key,
    )
    guarded.work.git("push", "-q", str(guarded.remote), "main")
    sync_rolls_out(guarded, canary)

    # One signer, a shared file that reaches eu-1 and us-1: refused before any cluster changes.
    single = pushed_by_one(guarded, "everyone on 7.2.6", {"base/objects.yaml": objects(guarded, "7.2.6")})
    message = sync_refuses(guarded, single)
    assert "not-approved: two-person rule prod: the revision changes clusters eu-1, us-1," in message
    assert "found 1 (ops)" in message
    for name, client in guarded.agent.clients.items():
        live = client.get(*RC, "sessions", guarded.namespace)["spec"]["version"]
        assert live == ("7.2.5" if name == "canary" else "7.2.4"), name

    # The same change with the approver's signed merge over it rolls out.
    approved = approved_over(guarded, approver, canary, "approve: everyone on 7.2.6")
    sync_rolls_out(guarded, approved)
    for name, client in guarded.agent.clients.items():
        live = client.get(*RC, "sessions", guarded.namespace)["spec"]["version"]
        assert live == ("7.2.5" if name == "canary" else "7.2.6"), name


def _version_patch(setup: Setup, version: str) -> dict[str, object]:
    target = {"kind": "RedisCluster", "name": "sessions", "namespace": setup.namespace}
    return {
        "patches": [{"target": target, "ops": [{"op": "replace", "path": "/spec/version", "value": version}]}]
    }
