"""The writes an apiserver of the fleet audited (fleets started with ``audit``): who wrote what, when.

Each line of ``<cluster>/logs/audit.jsonl`` is one audit event of the apiserver itself, so what is
read here is what the cluster saw, not what a client says it did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from devfleet.state import Fleet


@dataclass(frozen=True)
class AuditedWrite:
    """One write request as the apiserver audited it."""

    at: datetime
    verb: str
    resource: str
    namespace: str
    name: str
    user: str
    user_agent: str
    code: int
    subresource: str = ""
    dry_run: bool = False
    """A server-side dry run (``dryRun=All``): checked and answered, never stored."""


def _parse(line: str) -> AuditedWrite | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None  # a line being written right now
    ref = event.get("objectRef") or {}
    stamp = str(event.get("requestReceivedTimestamp", "")).replace("Z", "+00:00")
    return AuditedWrite(
        at=datetime.fromisoformat(stamp),
        verb=str(event.get("verb", "")),
        resource=str(ref.get("resource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        user=str((event.get("user") or {}).get("username", "")),
        user_agent=str(event.get("userAgent", "")),
        code=int((event.get("responseStatus") or {}).get("code", 0)),
        subresource=str(ref.get("subresource", "")),
        dry_run="dryRun=All" in str(event.get("requestURI", "")),
    )


def writes(fleet: Fleet, cluster: str) -> list[AuditedWrite]:
    """Every audited write to ``cluster`` so far, oldest first (empty when auditing is off)."""
    path: Path = fleet.cluster(cluster).files.audit_log
    if not path.is_file():
        return []
    found = [w for w in (_parse(line) for line in path.read_text().splitlines() if line.strip()) if w]
    return sorted(found, key=lambda w: w.at)
