"""The git source: poll the remote tip, fetch incrementally, check out one exact revision. [I/O]

Owns: one partial clone per cache folder, ``git ls-remote`` polls that fetch nothing when the tip did
not move, incremental fetches, the history-rewrite check against the last synced revision, read-only
checkouts of exact revisions, and credentials read from files (never in argv, logs or errors). Must not:
judge signatures, parse manifests or talk to clusters.
"""

from syncer.source.git_source import GitSource
from syncer.source.gitenv import redact
from syncer.source.model import PollResult, Snapshot, SourceOptions

__all__ = ["GitSource", "PollResult", "Snapshot", "SourceOptions", "redact"]
