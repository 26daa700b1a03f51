"""Text from git and from people through a real ``syncer run`` to real local receivers (Slack and a
signed webhook): a commit subject written to ping the channel and dress a link as Grafana, a file
name holding a line break, and a suspension's reason of 100 kB over many lines. Slack gets each as
data (escaped, bounded, on its line); the webhook gets it as JSON within its bounds; the command a
person types refuses such a reason before anything is written."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from syncer.domain.sync_state import Suspension
from syncer.status.acts import PersonActs
from tests.integration.agent.drills import no_traceback, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import ROLLOUT_TIMEOUT, Rig, agents, rig
from tests.integration.agent.test_notifications_e2e import (
    HMAC_KEY,
    ONE_WAVE,
    SLACK_PATH,
    _configure,
    _namespace_only,
    _one,
    _receiver,
    _syncer,
    _webhook,
    made,
)
from tests.support.receivers import Receiver
from tests.support.waiting import eventually
from tests.unit.fuzz.test_notification_renderers import _check_slack, _check_webhook

pytestmark = pytest.mark.integration
__all__ = ["agents", "made", "rig"]  # fixtures

SUBJECT = "<!channel> URGENT: approve <https://evil.example|https://grafana.example.org/d/syncer> now"
FILE = "base/evil\n<!here> forged line.yaml"
REASON = ("incident <!channel> & " + "x" * 200 + "\n") * 450  # about 100 kB, 450 lines


def _slack(slack: Receiver, kind: str) -> list[dict[str, Any]]:
    return [r.json for r in slack.all() if r.status < 300 and f"*{kind}*" in json.dumps(r.json)]


def _checked_slack(slack: Receiver, kind: str) -> dict[str, Any]:
    """The one Slack message of ``kind``, waited for, checked as the fuzz test checks every body."""
    found = eventually(f"a Slack {kind}", lambda: _slack(slack, kind), ROLLOUT_TIMEOUT)
    raw = next(r.body for r in slack.all() if r.json == found[0])
    _check_slack(raw)
    return found[0]


def _headline(body: dict[str, Any]) -> str:
    return str(body["blocks"][0]["text"]["text"])


@pytest.mark.slow
def test_hostile_subject_file_name_and_reason_reach_slack_and_the_webhook_as_bounded_data(
    rig: Rig, agents: Agents, made: list[Receiver]
) -> None:
    hook = _receiver(made)
    slack = _receiver(made)
    (rig.root / "slack.url").write_text(slack.url + SLACK_PATH)
    _configure(
        rig,
        {
            "receivers": [_webhook("ops", hook), {"name": "chat", "type": "slack", "urlFile": "slack.url"}],
            "routes": [{"receivers": ["ops", "chat"]}],
        },
    )
    policy = write_policy(rig, "one-wave.yaml", ONE_WAVE)
    with agents.shown_on_failure():
        good = _namespace_only(rig, "good")
        agent = agents.start("agent", rig.args(policy, "--no-leader-elect"))
        eventually("every cluster healthy", lambda: rig.all_healthy(good), ROLLOUT_TIMEOUT)

        # 1. An unsigned commit whose subject would ping the channel and disguise a link.
        unsigned = rig.work.commit(SUBJECT, {"notes.txt": "x"})
        rig.work.git("push", "-q", str(rig.remote), "main")
        rejected = _one(hook, kind="revision-rejected", revision=unsigned)
        assert SUBJECT in rejected["message"], "the webhook carries the subject as JSON data, whole"
        chat = _checked_slack(slack, "revision-rejected")
        said = _headline(chat)
        assert "&lt;!channel&gt; URGENT: approve &lt;https://evil.example|https://grafana" in said
        assert "<!channel>" not in json.dumps(chat)

        # 2. A signed commit holding a file whose name has a line break (and a broken document).
        broken = rig.work.commit("a broken file", {FILE: "a: [\n"}, sign=rig.key)
        rig.work.git("push", "-q", str(rig.remote), "main")
        refused = _one(hook, kind="revision-rejected", revision=broken)
        assert FILE in refused["message"]
        chat = eventually(
            "the broken file told on Slack",
            lambda: [b for b in _slack(slack, "revision-rejected") if "forged line" in _headline(b)],
            ROLLOUT_TIMEOUT,
        )[0]
        said = _headline(chat)
        assert "base/evil\\n&lt;!here&gt; forged line.yaml" in said, said
        assert "\n&lt;!here&gt;" not in said, "the file name starts no line of its own"

        # 3. A 100 kB reason over many lines: the command refuses it before anything is written.
        for reason in (REASON, "incident 42\nforged: line"):
            typed = _syncer(rig, "suspend", "--cluster", "us-1", "--reason", reason)
            assert typed.returncode == 2, typed.stderr
            assert "--reason" in typed.stderr
        assert not rig.states()["us-1"].suspension.active
        # Written into the cluster's record by other means, it is told bounded and on one line.
        PersonActs(rig.clients["us-1"], rig.state_namespace).record_suspension(
            Suspension(REASON, "someone", 1.0)
        )
        told = _one(hook, kind="suspended", cluster="us-1")
        raw = next(r.body for r in hook.all() if r.json == told)
        _check_webhook(raw)
        assert len(told["message"]) <= 3000
        assert told["message"].endswith("…")
        chat = _checked_slack(slack, "suspended")
        said = _headline(chat)
        assert len(said) <= 3000
        assert "\n" not in said
        assert "\\n" in said
        assert not re.search(r"&(?!amp;|lt;|gt;)", said)
        assert all(r.signed_with(HMAC_KEY) for r in hook.all())
        no_traceback(agent)
