"""Notifications from a real ``syncer run`` on the real fleet to real HTTP receivers the tests start
(``tests.support.receivers``): each event class the fleet can be driven into, with its payload and
HMAC checked; a receiver answering 500 then 200 gets each message once; a hanging receiver does not
slow the rollout; a flood of identical failures is folded; a commit status reaches a fake forge."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.agent.drills import FAST, commit_per_cluster, no_traceback, write_policy
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.agent.test_agent_process import ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.support.receivers import Receiver
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

HMAC_KEY = "hmac-key-that-never-shows-9f2c"
FORGE_TOKEN = "forge-token-that-never-shows-71ab"
SLACK_PATH = "/services/T000/B000/slack-path-that-never-shows-4d1e"


@pytest.fixture
def made() -> Iterator[list[Receiver]]:
    """The receivers a test starts, closed at its end."""
    started: list[Receiver] = []
    try:
        yield started
    finally:
        for receiver in started:
            receiver.close()


def _receiver(made: list[Receiver], **options: Any) -> Receiver:
    receiver = Receiver(**options)
    made.append(receiver)
    return receiver


def _configure(rig: Rig, notifications: dict[str, Any], clusters: dict[str, Any] | None = None) -> None:
    """Give the rig's agent config ``notifications`` (and, when given, other cluster access)."""
    path = rig.root / "agent.yaml"
    config = yaml.safe_load(path.read_text())
    config["notifications"] = notifications
    if clusters:
        config["clusters"].update(clusters)
    path.write_text(yaml.safe_dump(config))
    (rig.root / "hmac.key").write_text(HMAC_KEY + "\n")
    (rig.root / "forge.token").write_text(FORGE_TOKEN + "\n")


def _webhook(name: str, receiver: Receiver) -> dict[str, str]:
    return {"name": name, "type": "webhook", "url": f"{receiver.url}/hook", "secretFile": "hmac.key"}


def _syncer(rig: Rig, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "syncer", *args, "--config", str(rig.root / "agent.yaml")]
    command += ["--state-namespace", rig.state_namespace]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _one(receiver: Receiver, **match: str) -> dict[str, Any]:
    """The one 2xx body matching ``match``, waited for."""
    found = eventually(f"a {match} notice", lambda: receiver.bodies(**match), ROLLOUT_TIMEOUT)
    return found[0]


def _no_secret_in(proc: AgentProc) -> None:
    said = proc.stderr_path.read_text() + proc.stdout_path.read_text()
    for secret in (HMAC_KEY, FORGE_TOKEN, SLACK_PATH, "slack-path-that-never-shows"):
        assert secret not in said


def test_each_class_of_a_rollout_reaches_signed_webhooks_slack_and_the_forge_once_each(
    rig: Rig, agents: Agents, made: list[Receiver]
) -> None:
    rig.start_controllers()
    hook = _receiver(made)
    flaky = _receiver(made, statuses=(500,))
    slack = _receiver(made)
    forge = _receiver(made)
    (rig.root / "slack.url").write_text(slack.url + SLACK_PATH)
    _configure(
        rig,
        {
            "receivers": [
                _webhook("ops", hook),
                _webhook("flaky", flaky),
                {"name": "chat", "type": "slack", "urlFile": "slack.url"},
                {
                    "name": "forge",
                    "type": "commit-status",
                    "apiUrl": f"{forge.url}/api/v3",
                    "repository": "acme/fleet",
                    "tokenFile": "forge.token",
                    "context": "syncer/fleet",
                },
            ],
            "routes": [
                {"receivers": ["ops", "forge", "flaky"]},
                {"receivers": ["chat"], "minSeverity": "warning"},
            ],
        },
    )
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        agent = agents.start("agent", rig.args("two-waves.yaml", "--no-leader-elect"))
        eventually("every cluster healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)

        started = _one(hook, kind="rollout-started", revision=first)
        finished = _one(hook, kind="rollout-finished", revision=first)
        assert (started["severity"], started["wave"], started["commands"]) == (
            "info",
            "canary",
            ["syncer status"],
        )
        assert finished["reason"] == "healthy"
        passed = eventually("both waves passed", lambda: hook.bodies(kind="wave-passed", revision=first), 30)
        assert sorted(b["wave"] for b in passed) == ["canary", "rest"]
        assert all(r.signed_with(HMAC_KEY) for r in hook.all())
        assert not any(r.signed_with("another key") for r in hook.all())

        # The forge: pending when the rollout starts, success once it finished, on the commit's sha.
        statuses = eventually(
            "a success status", lambda: [r for r in forge.all() if r.json["state"] == "success"], 30
        )
        assert statuses[0].path == f"/api/v3/repos/acme/fleet/statuses/{first}"
        assert statuses[0].headers["Authorization"] == f"token {FORGE_TOKEN}"
        assert statuses[0].json["context"] == "syncer/fleet"
        assert forge.all()[0].json["state"] == "pending"

        # An unsigned tip: rejected for its signature, told to the webhook, Slack and the forge.
        unsigned = rig.work.commit("unsigned", {"notes.txt": "x"})
        rig.work.git("push", "-q", str(rig.remote), "main")
        rejected = _one(hook, kind="revision-rejected", revision=unsigned)
        assert (rejected["severity"], rejected["reason"]) == ("error", "signature")
        assert "unsigned" in rejected["message"]
        errored = eventually(
            "an error status", lambda: [r for r in forge.all() if r.json["state"] == "error"], 30
        )
        assert errored[0].path.endswith(f"/statuses/{unsigned}")
        chat = eventually("the Slack message", slack.bodies, 30)
        assert [r.path for r in slack.all()] == [SLACK_PATH]
        assert "revision-rejected" in chat[0]["text"]
        assert [b["type"] for b in chat[0]["blocks"]] == ["section", "section", "context"]
        assert "rollout-started" not in str(chat), "info notices do not reach a warning route"

        # A person's suspension and resumption of one cluster, each told once.
        assert (
            _syncer(rig, "suspend", "--cluster", "us-1", "--reason", "incident 42", "--by", "ops").returncode
            == 0
        )
        suspended = _one(hook, kind="suspended", cluster="us-1")
        assert "incident 42" in suspended["message"]
        assert suspended["commands"] == [
            "syncer status --cluster us-1",
            "kubectl --context us-1 get redisclusters -A -o wide",
        ]
        resumed = _syncer(rig, "resume", "--cluster", "us-1", "--reason", "incident 42 over", "--by", "ops")
        assert resumed.returncode == 0, resumed.stderr
        told = _one(hook, kind="resumed", cluster="us-1")
        assert told["message"].startswith("resumed by ops at ")
        assert told["message"].endswith(": incident 42 over")

        # The receiver that answered 500 first got every message exactly once, like the others.
        def delivered(receiver: Receiver) -> list[bytes]:
            return sorted(r.body for r in receiver.all() if r.status == 200)

        eventually("the flaky receiver caught up", lambda: len(delivered(flaky)) == len(delivered(hook)), 30)
        assert [r.status for r in flaky.all()][:2] == [500, 200]
        assert flaky.all()[0].body == flaky.all()[1].body
        assert len(set(delivered(flaky))) == len(delivered(flaky))
        metrics = agent.metrics()
        assert metrics['syncer_notifications_total{receiver="flaky",result="sent"}'] == len(delivered(flaky))
        assert metrics['syncer_notifications_total{receiver="flaky",result="failed"}'] == 0
        assert metrics['syncer_notifications_total{receiver="ops",result="dropped"}'] == 0
        _no_secret_in(agent)
        no_traceback(agent)


def _folded(agent: AgentProc, receiver: str) -> float:
    """The agent's count of notices folded for ``receiver`` (0 while /metrics does not answer in
    time: the machine may be busy)."""
    try:
        return agent.metrics()[f'syncer_notifications_total{{receiver="{receiver}",result="folded"}}']
    except OSError:
        return 0.0


def _unreachable_kubeconfig(rig: Rig, cluster: str) -> Path:
    """A copy of the fleet's kubeconfig whose ``cluster`` points at a port nothing listens on."""
    config = yaml.safe_load(rig.fleet.kubeconfig.read_text())
    context = next(c["context"] for c in config["contexts"] if c["name"] == cluster)
    for entry in config["clusters"]:
        if entry["name"] == context["cluster"]:
            entry["cluster"]["server"] = "https://127.0.0.1:1"
    path = rig.root / "unreachable.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.slow
def test_a_failed_wave_and_its_rollback_are_told_and_a_flood_of_one_unreachable_cluster_is_folded(
    rig: Rig, agents: Agents, made: list[Receiver]
) -> None:
    rig.start_controllers()
    hook = _receiver(made)
    dead = _unreachable_kubeconfig(rig, "us-1")
    _configure(
        rig,
        {
            "receivers": [_webhook("ops", hook)],
            "routes": [{"receivers": ["ops"], "minSeverity": "warning"}],
            "unreachableAfterSeconds": 0,
        },
        clusters={"us-1": {"context": "us-1", "kubeconfig": str(dead)}},
    )
    policy = write_policy(rig, "fast.yaml", FAST)
    with agents.shown_on_failure():
        good = commit_per_cluster(rig, "good", {"canary": "7.2.4", "eu-1": "7.2.4", "us-1": "7.2.4"})
        agent = agents.start("agent", rig.args(policy, "--no-leader-elect"))
        unreachable = _one(hook, kind="cluster-unreachable", cluster="us-1")
        assert unreachable["severity"] == "warning"
        eventually(
            "canary healthy on the good commit",
            lambda: (
                rig.states()["canary"].revision == good and rig.states()["canary"].phase.value == "healthy"
            ),
            ROLLOUT_TIMEOUT,
        )
        bad = commit_per_cluster(
            rig, "bad canary", {"canary": "7.2.5", "eu-1": "7.2.5", "us-1": "7.2.5"}, hold=("canary",)
        )
        failed = _one(hook, kind="wave-failed", revision=bad)
        assert (failed["wave"], failed["reason"], failed["severity"]) == ("canary", "unhealthy", "error")
        assert (failed["cluster"], failed["clusters"]) == ("canary", ["canary"])
        assert f"syncer retry --config agent.yaml --cluster canary --revision {bad[:12]}" in " ".join(
            failed["commands"]
        )
        back = _one(hook, kind="rollback-done", cluster="canary")
        assert back["revision"] == good
        assert bad[:12] in back["message"]
        # Pass after pass us-1 cannot be reached: told once, every repeat folded.
        eventually("repeats folded", lambda: _folded(agent, "ops") >= 3, 120, every=1.0)
        assert len(hook.bodies(kind="cluster-unreachable", cluster="us-1")) == 1
        assert all(r.signed_with(HMAC_KEY) for r in hook.all())
        _no_secret_in(agent)
        no_traceback(agent)


ONE_WAVE = {
    "waves": [{"name": "all", "percent": 100}],
    "defaults": {"maxConcurrent": 3, "healthTimeout": "60s", "bake": "1s"},
    "rollback": False,
}


def _rollout_seconds(proc: AgentProc, revision: str) -> float:
    """Seconds from the agent's ``rollout-started`` to its ``rollout-finished`` of ``revision``."""

    def at(step: str) -> datetime | None:
        found = [r for r in proc.steps(step) if r.get("revision") == revision]
        return datetime.fromisoformat(found[0]["time"]) if found else None

    end = eventually(f"{revision[:12]} finished", lambda: at("rollout-finished"), ROLLOUT_TIMEOUT)
    start = at("rollout-started")
    assert start is not None
    return (end - start).total_seconds()


def _namespace_only(rig: Rig, mark: str) -> str:
    """A signed commit of the test's namespace alone, labelled ``mark``: healthy as soon as it is
    applied, so that a rollout's time is the pass's own work and the bake, not a controller's pace."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": rig.namespace, "labels": {"mark": mark}},
    }
    sha = rig.work.commit(f"mark {mark}", {"base/objects.yaml": yaml.safe_dump(namespace)}, sign=rig.key)
    rig.work.git("push", "-q", str(rig.remote), "main")
    return sha


def _timed_rollouts(rig: Rig, agent: AgentProc, marks: tuple[str, ...]) -> list[float]:
    """Each of ``marks`` committed in turn once the one before is healthy everywhere; its rollout's
    seconds."""
    seconds = []
    for mark in marks:
        revision = _namespace_only(rig, mark)
        seconds.append(_rollout_seconds(agent, revision))
        eventually(f"every cluster healthy on {mark}", lambda r=revision: rig.all_healthy(r), ROLLOUT_TIMEOUT)
    return seconds


def test_a_receiver_that_hangs_does_not_delay_the_rollout(
    rig: Rig, agents: Agents, made: list[Receiver]
) -> None:
    hook = _receiver(made)
    hanging = _receiver(made, hang=True)
    policy = write_policy(rig, "one-wave.yaml", ONE_WAVE)
    with agents.shown_on_failure():
        _configure(rig, {"receivers": [_webhook("ops", hook)], "routes": [{"receivers": ["ops"]}]})
        agent = agents.start("without", rig.args(policy, "--no-leader-elect"))
        without = _timed_rollouts(rig, agent, ("a", "b", "c"))[1:]  # the first creates the namespace
        agent.kill()

        _configure(
            rig,
            {
                "receivers": [_webhook("ops", hook), _webhook("stuck", hanging)],
                "routes": [{"receivers": ["stuck", "ops"]}],
            },
        )
        agent = agents.start("with", rig.args(policy, "--no-leader-elect"))
        with_hang = _timed_rollouts(rig, agent, ("d", "e"))
        print(f"rollouts without a hanging receiver: {without}s, with one: {with_hang}s")
        assert sum(with_hang) / len(with_hang) - sum(without) / len(without) < 1.0
        # The hanging receiver holds its first request still; the other got every notice.
        assert hanging.arrived >= 1
        assert hanging.all() == []
        assert len(hook.bodies(kind="rollout-finished")) == 5
        no_traceback(agent)


def test_a_wave_held_by_its_window_beyond_the_bound_is_told_as_a_window_wait(
    rig: Rig, agents: Agents, made: list[Receiver]
) -> None:
    hook = _receiver(made)
    frozen = {
        **ONE_WAVE,
        "windows": [{"name": "freeze", "kind": "deny", "schedule": "0 0 * * *", "duration": "24h"}],
    }
    policy = write_policy(rig, "frozen.yaml", frozen)
    _configure(
        rig,
        {
            "receivers": [_webhook("ops", hook)],
            "routes": [{"receivers": ["ops"], "events": ["wave-failed"]}],
            "windowWaitAfterSeconds": 0,
        },
    )
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        agent = agents.start("agent", rig.args(policy, "--no-leader-elect"))
        waiting = _one(hook, kind="wave-failed", revision=revision)
        assert (waiting["wave"], waiting["reason"], waiting["severity"]) == ("all", "window-wait", "warning")
        assert "freeze" in waiting["message"]
        assert all(state.revision != revision for state in rig.states().values())
        assert all(r.signed_with(HMAC_KEY) for r in hook.all())
        no_traceback(agent)
