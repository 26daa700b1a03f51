"""Arbitrary text from git, people and configs (commit subjects, file names, reasons, signer and
cluster names) through every notification renderer: each body is valid for its sink and within its
limits. Slack: valid JSON, no ``<``, ``>`` or bare ``&`` (every ``&`` starts one of Slack's three
escapes), a section's text at most 3000 characters, a field's 2000, a header's 150, a context
element's 2000, ``text`` 4000, at most 50 blocks and 10 fields a section. Webhook: valid JSON, the
message at most 3000 characters, every other text 2000, at most 16 commands of 300. Commit status:
a description of at most 140."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from syncer.config.notifications import Receiver, ReceiverKind, Secret
from syncer.config.settings import NotifySettings
from syncer.domain.notices import Notice, NoticeClass, Severity
from syncer.domain.progress import PassEvent, Step
from syncer.errors import VerificationError
from syncer.notify.classify import RULES, Classifier
from syncer.notify.payloads import (
    MAX_DESCRIPTION,
    WEBHOOK_COMMAND,
    WEBHOOK_COMMANDS,
    WEBHOOK_FIELD,
    WEBHOOK_MESSAGE,
    request_for,
)

HOSTILE = [
    "<!channel> URGENT: approve <https://evil.example|https://grafana.example.org/d/syncer> now",
    "<@U024BE7LH>",
    "&lt;!here&gt;",
    "a\nb\r\n\x1b[31mred\x00",
    "`code` *bold* _it_ ~st~ ```block```",
    "&" * 3001,
    "<" * 2001,
    "\u202eevil\u200b",
]
TEXT = st.one_of(
    st.text(max_size=200),
    st.sampled_from(HOSTILE),
    st.builds(lambda t, n: t * n, st.sampled_from([*HOSTILE, "x", "&", "<>"]), st.integers(1, 5000)),
)
NAMES = st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE))
RECEIVERS = [
    Receiver("ops", ReceiverKind.WEBHOOK, Secret("t", "k"), url="https://hooks.example/in"),
    Receiver("chat", ReceiverKind.SLACK, Secret("t", "https://hooks.slack.example/services/x")),
    Receiver(
        "forge", ReceiverKind.COMMIT_STATUS, Secret("t", "tok"), url="https://f.example", repository="a/b"
    ),
]
TOLD = [step for step, rule in RULES.items() if rule is not None]


def _slack_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """Each text of a Slack body with where it is."""
    found = [("text", body["text"])]
    for block in body["blocks"]:
        if "text" in block:
            found.append((block["type"], block["text"]["text"]))
        found += [("field", f["text"]) for f in block.get("fields", [])]
        found += [("context", e["text"]) for e in block.get("elements", [])]
    return found


LIMITS = {"text": 4000, "section": 3000, "field": 2000, "context": 2000, "header": 150}


def _check_slack(raw: bytes) -> None:
    body = json.loads(raw)
    assert len(body["blocks"]) <= 50
    for block in body["blocks"]:
        assert len(block.get("fields", [])) <= 10
    for where, text in _slack_texts(body):
        assert len(text) <= LIMITS[where], (where, len(text))
        assert "<" not in text
        assert ">" not in text
        assert not re.search(r"&(?!amp;|lt;|gt;)", text), text


def _check_webhook(raw: bytes) -> None:
    body = json.loads(raw)
    assert len(body["message"]) <= WEBHOOK_MESSAGE
    for key in ("cluster", "wave", "revision", "reason", "summary"):
        assert len(body[key]) <= WEBHOOK_FIELD, key
    assert len(body["commands"]) <= WEBHOOK_COMMANDS
    assert all(len(c) <= WEBHOOK_COMMAND for c in body["commands"])
    assert all(len(c) <= WEBHOOK_FIELD for c in body["clusters"])


def _check_all(notice: Notice) -> None:
    for receiver in RECEIVERS:
        request = request_for(notice, receiver)
        if request is None:
            continue
        if receiver.kind is ReceiverKind.SLACK:
            _check_slack(request.body)
        elif receiver.kind is ReceiverKind.WEBHOOK:
            _check_webhook(request.body)
        else:
            assert len(json.loads(request.body)["description"]) <= MAX_DESCRIPTION


@given(
    step=st.sampled_from(TOLD),
    wave=NAMES,
    cluster=NAMES,
    revision=st.one_of(st.just("0123456789abcdef0123456789abcdef01234567"), NAMES),
    reason=TEXT,
    error=TEXT,
    clusters=st.lists(NAMES, max_size=30),
)
def test_every_notice_a_pass_event_gives_is_valid_and_bounded_for_every_sink(
    *, step: Step, wave: str, cluster: str, revision: str, reason: str, error: str, clusters: list[str]
) -> None:
    event = PassEvent(step, wave, cluster, revision, reason=reason, error=error, clusters=tuple(clusters))
    notice = Classifier(NotifySettings(unreachable_after=0, window_wait_after=0), {}).notice(event, 0.0)
    if notice is not None:
        _check_all(notice)


@given(subject=TEXT, files=st.lists(NAMES, max_size=20), signer=NAMES)
def test_a_rejected_revision_carrying_a_subject_file_names_and_a_signer_is_valid_and_bounded(
    subject: str, files: list[str], signer: str
) -> None:
    text = f"commit by {signer}: {subject}: changes outside its scope: {', '.join(files)}"
    event = PassEvent(Step.REVISION_REJECTED, revision="a" * 40, error=text, cause=VerificationError(text))
    notice = Classifier(NotifySettings(), {}).notice(event, 0.0)
    assert notice is not None
    _check_all(notice)


@given(
    kind=st.sampled_from(list(NoticeClass)),
    severity=st.sampled_from(list(Severity)),
    texts=st.lists(TEXT, min_size=6, max_size=6),
    commands=st.lists(TEXT, max_size=40),
    clusters=st.lists(NAMES, max_size=40),
)
@example(NoticeClass.WAVE_FAILED, Severity.ERROR, [HOSTILE[0]] * 6, ["a&b" * 100] * 40, ["<!here>"] * 40)
def test_any_notice_at_all_is_valid_and_bounded_for_every_sink(
    kind: NoticeClass, severity: Severity, texts: list[str], commands: list[str], clusters: list[str]
) -> None:
    revision, cluster, wave, reason, detail, _ = texts
    notice = Notice(
        kind, severity, revision, cluster, wave, reason, detail, tuple(commands), 0.0, tuple(clusters)
    )
    _check_all(notice)
