"""The bodies and headers each kind of receiver gets for a notice, and the HMAC signature of the
generic webhook. Pure: no request is sent here.

- ``webhook``: the notice as JSON (``webhook_body``), signed like Flux's ``generic-hmac``: the header
  ``X-Signature: sha256=<hex>`` holds the HMAC-SHA256 of the exact body bytes under the shared key.
- ``slack``: an incoming-webhook payload, ``text`` (the fallback line) and ``blocks``. Every text
  that comes from git, a person or a config (subjects, file names, reasons, cluster names) is data
  there: ``slack_text`` escapes what Slack reads as markup (``&``, ``<``, ``>``: no mention, no
  disguised link), shows line breaks and other control characters as escapes (a file name cannot
  start a line of its own) and bounds it to what Slack accepts in that place.
- ``commit-status``: ``POST {apiUrl}/repos/{owner}/{repo}/statuses/{sha}`` with ``state``,
  ``context``, ``description`` and ``target_url`` (GitHub and Gitea take the same body).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from syncer.config.notifications import Receiver, ReceiverKind
from syncer.domain.notices import Notice, NoticeClass

SIGNATURE_HEADER = "X-Signature"
SIGNATURE_PREFIX = "sha256="
# GitHub refuses a description longer than this.
MAX_DESCRIPTION = 140

# The commit status each class gives the revision it names (others leave the commit alone).
COMMIT_STATES = MappingProxyType(
    {
        NoticeClass.ROLLOUT_STARTED: "pending",
        NoticeClass.WAVE_PASSED: "pending",
        NoticeClass.ROLLOUT_FINISHED: "success",
        NoticeClass.WAVE_FAILED: "failure",
        NoticeClass.REVISION_REJECTED: "error",
        NoticeClass.ABORTED: "failure",
    }
)


@dataclass(frozen=True)
class Request:
    """One POST to a receiver: the URL, the JSON body bytes and the headers (the URL and the headers
    may hold a secret: neither is ever printed)."""

    url: str = field(repr=False)
    body: bytes
    headers: MappingProxyType[str, str] = field(repr=False)


def sign(body: bytes, key: str) -> str:
    """The ``X-Signature`` value of ``body``: ``sha256=`` and the hex HMAC-SHA256 under ``key``."""
    return SIGNATURE_PREFIX + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def _json(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


# The bounds of a webhook body's texts: the message as a Slack section's, every other text as a
# Slack field's, each command and at most this many of them (cut saying so, like Slack's).
WEBHOOK_MESSAGE, WEBHOOK_FIELD, WEBHOOK_COMMAND, WEBHOOK_COMMANDS = 3000, 2000, 300, 16


def bounded(text: str, limit: int) -> str:
    """``text`` whole when it has at most ``limit`` characters, else cut to ``limit`` with ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def webhook_body(notice: Notice) -> dict[str, Any]:
    """The notice as JSON, every text bounded (JSON itself keeps any character as data)."""
    return {
        "class": str(notice.kind),
        "severity": str(notice.severity),
        "cluster": bounded(notice.cluster, WEBHOOK_FIELD),
        "clusters": [bounded(c, WEBHOOK_FIELD) for c in notice.clusters[:WEBHOOK_COMMANDS]],
        "wave": bounded(notice.wave, WEBHOOK_FIELD),
        "revision": bounded(notice.revision, WEBHOOK_FIELD),
        "reason": bounded(notice.reason, WEBHOOK_FIELD),
        "message": bounded(notice.detail, WEBHOOK_MESSAGE),
        "summary": bounded(notice.summary, WEBHOOK_FIELD),
        "commands": [bounded(c, WEBHOOK_COMMAND) for c in notice.commands[:WEBHOOK_COMMANDS]],
        "time": datetime.fromtimestamp(notice.at, UTC).isoformat(timespec="seconds"),
    }


# What Slack accepts (Block Kit): a section's text, a field's and a context element's, and the
# message's fallback text (longer ones are refused or cut by Slack itself).
SLACK_SECTION, SLACK_FIELD, SLACK_CONTEXT, SLACK_TEXT = 3000, 2000, 2000, 4000
_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def slack_text(text: str, limit: int) -> str:
    """``text`` as data in Slack's markup: its control characters escaped, ``&``, ``<`` and ``>``
    escaped as Slack documents, and at most ``limit`` characters (saying it was cut)."""
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)
    escaped = shown.translate(_SLACK_ESCAPES)
    if len(escaped) <= limit:
        return escaped
    cut = escaped[: limit - 1]
    # Never end inside an escape (``&am``): drop a partial entity at the cut.
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + "…"


def _whole_lines(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its whole lines that fit and ``…``
    (never a line, an escape or a code span cut in two)."""
    if len(text) <= limit:
        return text
    return text[: text.rfind("\n", 0, limit - 1)] + "\n…"


def slack_body(notice: Notice) -> dict[str, Any]:
    icon = {"info": ":large_blue_circle:", "warning": ":warning:", "error": ":red_circle:"}[notice.severity]
    fields = [
        {"type": "mrkdwn", "text": f"*{label}*\n{slack_text(value, SLACK_FIELD - len(label) - 3)}"}
        for label, value in (
            ("Cluster", notice.cluster or "(fleet)"),
            ("Wave", notice.wave or "-"),
            ("Revision", notice.revision[:12] or "-"),
            ("Reason", notice.reason or "-"),
        )
    ]
    commands = "\n".join(f"`{slack_text(c, 300)}`" for c in notice.commands)
    head = f"{icon} *{notice.kind}*: "
    headline = head + slack_text(notice.detail, SLACK_SECTION - len(head))
    return {
        "text": f"{icon} syncer: " + slack_text(notice.summary, SLACK_TEXT - len(icon) - 9),
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": headline},
            },
            {"type": "section", "fields": fields},
            {
                "type": "context",
                "elements": [
                    {"type": "mrkdwn", "text": _whole_lines(f"Look closer:\n{commands}", SLACK_CONTEXT)}
                ],
            },
        ],
    }


def status_body(notice: Notice, receiver: Receiver) -> dict[str, Any] | None:
    """The commit status of ``notice`` (None: its class does not set one, or it names no revision)."""
    state = COMMIT_STATES.get(notice.kind)
    if state is None or not notice.revision:
        return None
    body: dict[str, Any] = {
        "state": state,
        "context": receiver.context,
        "description": notice.summary[:MAX_DESCRIPTION],
    }
    if receiver.target_url:
        body["target_url"] = receiver.target_url
    return body


def request_for(notice: Notice, receiver: Receiver) -> Request | None:
    """The request ``receiver`` gets for ``notice`` (None: nothing to send it)."""
    headers = {"Content-Type": "application/json", "User-Agent": "syncer"}
    if receiver.kind is ReceiverKind.WEBHOOK:
        body = _json(webhook_body(notice))
        headers[SIGNATURE_HEADER] = sign(body, receiver.secret.reveal())
        return Request(receiver.url, body, MappingProxyType(headers))
    if receiver.kind is ReceiverKind.SLACK:
        return Request(receiver.secret.reveal(), _json(slack_body(notice)), MappingProxyType(headers))
    status = status_body(notice, receiver)
    if status is None:
        return None
    headers["Authorization"] = f"token {receiver.secret.reveal()}"
    headers["Accept"] = "application/vnd.github+json"
    url = f"{receiver.url}/repos/{receiver.repository}/statuses/{notice.revision}"
    return Request(url, _json(status), MappingProxyType(headers))
