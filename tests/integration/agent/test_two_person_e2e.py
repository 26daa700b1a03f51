"""The two-person rule end to end on the real fleet: a change to a guarded path signed by one person is
rejected before any cluster changes; the same change approved by a second signer's merge commit rolls
out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from syncer.engine.revision import Stage
from syncer.rollout.moves import RolloutOutcome
from tests.integration.agent.test_agent_e2e import Setup, redis_cluster, states
from tests.integration.agent.test_agent_e2e import setup as e2e_setup
from tests.integration.verify.kit import Keys, SshKey, write_policy

pytestmark = pytest.mark.integration

GUARDED = "base/prod/sessions.yaml"


@pytest.fixture
def approver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshKey]:
    with Keys(tmp_path_factory.mktemp("approver-keys")) as keys:
        yield keys.ssh("approver")


def with_two_person_rule(setup: Setup, approver: SshKey, root: Path, rule: dict[str, object]) -> Setup:
    """The e2e setup restarted with a trust policy of two signers (ops, approver) and ``rule``."""
    signers: list[dict[str, object]] = [
        {"name": "ops", "ssh": setup.key.public_line},
        {"name": "approver", "ssh": approver.public_line},
    ]
    trust = write_policy(root / "trust.yaml", signers=signers, keys=[])
    trust.write_text(trust.read_text() + yaml.safe_dump({"twoPersonRules": [rule]}))
    setup.restart(root / "agent.yaml")
    return setup


def pushed_by_one(setup: Setup, message: str, files: dict[str, str]) -> str:
    """``files`` committed by ops alone on a branch ``change``, fast-forwarded into main and pushed."""
    work = setup.work
    work.git("checkout", "-q", "-b", "change")
    single = work.commit(message, files, sign=setup.key)
    work.git("checkout", "-q", "main")
    work.git("merge", "-q", "--ff-only", "change")
    work.git("push", "-q", str(setup.remote), "main")
    return single


def approved_over(setup: Setup, approver: SshKey, base: str, message: str) -> str:
    """Main reset to ``base``, the branch ``change`` merged over it by the approver's signed merge
    commit, and pushed."""
    setup.work.git("reset", "-q", "--hard", base)
    approved = setup.work.merge("change", message, sign=approver)
    setup.work.git("push", "-q", str(setup.remote), "main")
    return approved


def sync_rolls_out(setup: Setup, revision: str) -> None:
    """One pass: ``revision`` passes verification and is applied."""
    result = setup.agent.sync_once()
    assert result.advance.rejection is None, result.advance.rejection
    assert result.report is not None
    assert (result.report.outcome, result.report.revision) == (RolloutOutcome.APPLIED, revision)


def sync_refuses(setup: Setup, revision: str) -> str:
    """One pass: ``revision`` is refused at verification and no cluster's sync state moves. The
    refusal's message."""
    before = states(setup)
    result = setup.agent.sync_once()
    rejection = result.advance.rejection
    assert rejection is not None
    assert (rejection.stage, rejection.revision) == (Stage.VERIFY, revision)
    assert {n: (s.revision, s.phase) for n, s in states(setup).items()} == {
        n: (s.revision, s.phase) for n, s in before.items()
    }
    return rejection.message


@pytest.fixture
def guarded(setup: Setup, approver: SshKey, tmp_path: Path) -> Setup:
    """The e2e setup with a trust policy of two signers and a two-person rule on ``base/prod/**``."""
    return with_two_person_rule(setup, approver, tmp_path, {"name": "prod", "paths": ["base/prod/**"]})


setup = e2e_setup


def test_one_signer_is_refused_before_any_cluster_changes_and_two_signers_roll_out(
    guarded: Setup, approver: SshKey
) -> None:
    start = guarded.commit("namespace", [])
    first = guarded.agent.sync_once()
    assert first.report is not None
    assert first.report.outcome is RolloutOutcome.APPLIED, first.report

    body = yaml.safe_dump(redis_cluster(guarded.namespace, "7.2.4"))
    single = pushed_by_one(guarded, "sessions for prod", {GUARDED: body})
    message = sync_refuses(guarded, single)
    assert "not-approved: two-person rule prod: the revision changes base/prod/sessions.yaml" in message
    assert "found 1 (ops)" in message
    for client in guarded.agent.clients.values():
        assert (
            client.list("redis.syncer.dev/v1alpha1", "RedisCluster", namespace=guarded.namespace).items == []
        )

    # A second person approves the same change with a signed merge commit.
    approved = approved_over(guarded, approver, start, "approve sessions for prod")
    sync_rolls_out(guarded, approved)
    for client in guarded.agent.clients.values():
        live = client.get("redis.syncer.dev/v1alpha1", "RedisCluster", "sessions", guarded.namespace)
        assert live["spec"]["version"] == "7.2.4"
