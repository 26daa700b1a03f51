"""What each kind of receiver gets: the signed webhook body, the Slack payload and the commit status."""

from __future__ import annotations

import hashlib
import hmac
import json

from syncer.config.notifications import Receiver, ReceiverKind, Secret
from syncer.domain.notices import Notice, NoticeClass, Severity
from syncer.notify.payloads import MAX_DESCRIPTION, request_for, sign

SHA = "0123456789abcdef0123456789abcdef01234567"
FAILED = Notice(
    NoticeClass.WAVE_FAILED,
    Severity.ERROR,
    revision=SHA,
    cluster="eu-1",
    wave="eu",
    reason="unhealthy",
    detail="eu-1: Stalled",
    commands=("syncer status --cluster eu-1", "kubectl --context eu-1 get redisclusters -A -o wide"),
    at=1_780_000_000.0,
    clusters=("eu-1",),
)


def _receiver(kind: ReceiverKind, secret: str, **fields: str) -> Receiver:
    return Receiver("r", kind, Secret("test", secret), **fields)


def test_the_webhook_body_is_the_notice_signed_like_generic_hmac() -> None:
    request = request_for(FAILED, _receiver(ReceiverKind.WEBHOOK, "k3y", url="https://hooks.example/in"))
    assert request is not None
    body = json.loads(request.body)
    assert body == {
        "class": "wave-failed",
        "severity": "error",
        "cluster": "eu-1",
        "clusters": ["eu-1"],
        "wave": "eu",
        "revision": SHA,
        "reason": "unhealthy",
        "message": "eu-1: Stalled",
        "summary": "wave-failed on eu-1 (wave eu) at 0123456789ab: unhealthy",
        "commands": list(FAILED.commands),
        "time": "2026-05-28T20:26:40+00:00",
    }
    expected = "sha256=" + hmac.new(b"k3y", request.body, hashlib.sha256).hexdigest()
    assert request.headers["X-Signature"] == expected == sign(request.body, "k3y")
    assert sign(request.body + b" ", "k3y") != expected
    assert request.url == "https://hooks.example/in"
    assert "k3y" not in repr(request)


def test_the_slack_payload_has_a_text_line_and_blocks_with_the_commands() -> None:
    secret_url = "https://hooks.slack.example/services/T/B/secret"
    request = request_for(FAILED, _receiver(ReceiverKind.SLACK, secret_url))
    assert request is not None
    assert request.url == secret_url
    assert secret_url not in repr(request)
    body = json.loads(request.body)
    assert body["text"] == ":red_circle: syncer: wave-failed on eu-1 (wave eu) at 0123456789ab: unhealthy"
    assert [b["type"] for b in body["blocks"]] == ["section", "section", "context"]
    assert "`kubectl --context eu-1 get redisclusters -A -o wide`" in body["blocks"][2]["elements"][0]["text"]


def test_the_commit_status_names_the_sha_state_and_context() -> None:
    forge = _receiver(
        ReceiverKind.COMMIT_STATUS,
        "t0ken",
        url="https://forge.example/api/v1",
        repository="acme/fleet",
        context="syncer/prod",
        target_url="https://dash.example/fleet",
    )
    request = request_for(FAILED, forge)
    assert request is not None
    assert request.url == f"https://forge.example/api/v1/repos/acme/fleet/statuses/{SHA}"
    assert request.headers["Authorization"] == "token t0ken"
    body = json.loads(request.body)
    assert body == {
        "state": "failure",
        "context": "syncer/prod",
        "description": FAILED.summary,
        "target_url": "https://dash.example/fleet",
    }
    states = {
        NoticeClass.ROLLOUT_STARTED: "pending",
        NoticeClass.ROLLOUT_FINISHED: "success",
        NoticeClass.REVISION_REJECTED: "error",
    }
    for kind, state in states.items():
        made = request_for(Notice(kind, Severity.INFO, revision=SHA, detail="x" * 500), forge)
        assert made is not None
        sent = json.loads(made.body)
        assert sent["state"] == state
        assert len(sent["description"]) <= MAX_DESCRIPTION


def test_classes_that_say_nothing_about_a_commit_send_no_status() -> None:
    forge = _receiver(ReceiverKind.COMMIT_STATUS, "t", url="https://f.example", repository="a/b")
    assert request_for(Notice(NoticeClass.CLUSTER_UNREACHABLE, Severity.WARNING, revision=SHA), forge) is None
    assert request_for(Notice(NoticeClass.ROLLOUT_FINISHED, Severity.INFO), forge) is None


HOSTILE = "<!channel> URGENT: approve <https://evil.example|https://grafana.example.org/d/syncer> now & then"


def _slack_texts(notice: Notice) -> list[str]:
    """Every text of the Slack payload ``notice`` gives, as Slack reads them."""
    request = request_for(notice, _receiver(ReceiverKind.SLACK, "https://hooks.slack.example/T/B/x"))
    assert request is not None
    body = json.loads(request.body)
    texts = [body["text"]]
    for block in body["blocks"]:
        texts += [block["text"]["text"]] if "text" in block else []
        texts += [f["text"] for f in block.get("fields", ())]
        texts += [e["text"] for e in block.get("elements", ())]
    return texts


def test_text_from_git_or_a_person_is_data_in_slack_no_mention_no_link_no_new_line() -> None:
    notice = Notice(
        NoticeClass.REVISION_REJECTED,
        Severity.ERROR,
        revision=SHA,
        reason=HOSTILE,
        detail=f"unsigned commit: {HOSTILE}; changed clusters/eu-1/x\n*owned by ops*.yaml",
        commands=(f"syncer verify --rev {HOSTILE}",),
    )
    for text in _slack_texts(notice):
        assert "<" not in text, text  # Slack's mentions and links all open with it
        assert ">" not in text, text
    headline = _slack_texts(notice)[1]
    assert "&lt;!channel&gt; URGENT: approve &lt;https://evil.example|https://grafana" in headline
    assert "x\\n*owned by ops*.yaml" in headline, "a line break in a file name is shown, not made"
    assert "now &amp; then" in headline


def test_a_huge_reason_is_bounded_to_what_slack_accepts_in_each_place() -> None:
    huge = Notice(
        NoticeClass.SUSPENDED, Severity.WARNING, cluster="eu-1", reason="r" * 100_000, detail="&" * 100_000
    )
    body = _slack_texts(huge)
    assert all(len(text) <= 4000 for text in body)
    headline = body[1]
    assert len(headline) <= 3000
    assert headline.endswith("&amp;…"), "cut after a whole escape, saying so"
    reason = next(t for t in body if t.startswith("*Reason*"))
    assert len(reason) <= 2000
    assert reason.endswith("…")


def test_the_docs_webhook_example_is_what_a_failed_wave_sends() -> None:
    from datetime import datetime
    from pathlib import Path

    from syncer.config.settings import NotifySettings
    from syncer.domain.progress import PassEvent, Step
    from syncer.notify.classify import Classifier

    doc = (Path(__file__).parents[3] / "docs" / "notifications.md").read_text()
    example = json.loads(doc.split("**webhook**", 1)[1].split("```json", 1)[1].split("```", 1)[0])
    at = datetime.fromisoformat(example["time"]).timestamp()
    event = PassEvent(
        Step.GATE_HALT, "eu", revision=example["revision"], reason=example["message"], clusters=("eu-1",)
    )
    notice = Classifier(NotifySettings(), {"eu-1": "eu-1"}).notice(event, at)
    assert notice is not None
    sent = request_for(notice, _receiver(ReceiverKind.WEBHOOK, "k3y", url="https://hooks.example/in"))
    assert sent is not None
    assert json.loads(sent.body) == example
