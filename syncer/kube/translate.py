"""Turn a failed API response into syncer's error tree. Pure: status, headers and body in, error out."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from syncer.errors import (
    Conflict,
    FieldCause,
    FieldConflict,
    Forbidden,
    Invalid,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
)

_MANAGER = re.compile(r'conflict with "([^"]+)"')


def _status(body: str) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except (ValueError, TypeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _causes(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    return [c for c in causes or [] if isinstance(c, dict)]


def field_conflicts(status: Mapping[str, Any]) -> list[FieldConflict]:
    """The (manager, field) pairs of a 409 from server-side apply."""
    found = []
    for cause in _causes(status):
        match = _MANAGER.search(str(cause.get("message", "")))
        if cause.get("reason") == "FieldManagerConflict" and match:
            found.append(FieldConflict(manager=match.group(1), field=str(cause.get("field", ""))))
    return found


def _retry_after(headers: Mapping[str, str]) -> float:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return max(0.0, float(value))
            except ValueError:
                return 0.0
    return 0.0


def api_error(
    status_code: int, body: str, headers: Mapping[str, str], *, cluster: str, subject: str
) -> KubeError:
    """The KubeError for an HTTP error answer of the apiserver."""
    status = _status(body)
    message = str(status.get("message") or body.strip() or f"HTTP {status_code}")
    where = {"cluster": cluster, "subject": subject}
    if status_code == 404:
        if not status:  # not a Status object: no such API path at all
            message = "the apiserver does not serve this kind (is its CustomResourceDefinition installed?)"
        return NotFound(message, status=404, **where)
    if status_code == 403:
        return Forbidden(message, status=403, **where)
    if status_code == 409:
        conflicts = field_conflicts(status)
        if conflicts:
            managers = ", ".join(sorted({c.manager for c in conflicts}))
            fields = ", ".join(c.field for c in conflicts)
            message = f"fields {fields} are owned by another field manager ({managers})"
        return Conflict(message, conflicts=conflicts, **where)
    if status_code == 422 or (status_code == 400 and status.get("reason") in {"BadRequest", "Invalid"}):
        causes = [FieldCause(str(c.get("field", "")), str(c.get("message", ""))) for c in _causes(status)]
        return Invalid(message, causes=causes, **where)
    if status_code == 429:
        return TooManyRequests(message, retry_after=_retry_after(headers), **where)
    if status_code >= 500:
        return ServerError(message, status=status_code, **where)
    return KubeError(message, status=status_code, **where)
