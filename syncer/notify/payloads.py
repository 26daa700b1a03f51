"""The bodies and headers each kind of receiver gets for a notice, and the HMAC signature of the
generic webhook. Pure: no request is sent here.

- ``webhook``: the notice as JSON (``webhook_body``), signed like Flux's ``generic-hmac``: the header
  ``X-Signature: sha256=<hex>`` holds the HMAC-SHA256 of the exact body bytes under the shared key.
- ``slack``: an incoming-webhook payload, ``text`` (the fallback line) and ``blocks``.
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


def webhook_body(notice: Notice) -> dict[str, Any]:
    return {
        "class": str(notice.kind),
        "severity": str(notice.severity),
        "cluster": notice.cluster,
        "wave": notice.wave,
        "revision": notice.revision,
        "reason": notice.reason,
        "message": notice.detail,
        "summary": notice.summary,
        "commands": list(notice.commands),
        "time": datetime.fromtimestamp(notice.at, UTC).isoformat(timespec="seconds"),
    }


def slack_body(notice: Notice) -> dict[str, Any]:
    icon = {"info": ":large_blue_circle:", "warning": ":warning:", "error": ":red_circle:"}[notice.severity]
    fields = [
        {"type": "mrkdwn", "text": f"*{label}*\n{value}"}
        for label, value in (
            ("Cluster", notice.cluster or "(fleet)"),
            ("Wave", notice.wave or "-"),
            ("Revision", f"`{notice.revision[:12]}`" if notice.revision else "-"),
            ("Reason", notice.reason or "-"),
        )
    ]
    commands = "\n".join(f"`{c}`" for c in notice.commands)
    headline = f"{icon} *{notice.kind}*: {notice.detail}"
    return {
        "text": f"{icon} syncer: {notice.summary}",
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": headline},
            },
            {"type": "section", "fields": fields},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f"Look closer:\n{commands}"}]},
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
