"""The git source: poll the remote tip, fetch incrementally, check out one exact revision. [I/O]

Owns: one clone per cache folder (partial for a network remote, whole for a repository on this
machine, which git is never run inside of), ``git ls-remote`` polls that fetch nothing when the tip
did not move, incremental fetches, the history-rewrite check against the last synced revision and the
revisions the fleet records, read-only checkouts of exact revisions (every git process in the one
environment of ``syncer.gitenv``), and credentials read from files (never in argv, logs, traces or
errors). Must not: judge signatures, parse manifests or talk to clusters.
"""

from syncer.source.git_source import GitSource
from syncer.source.runner import redact
from syncer.source.snapshots import PollResult, Snapshot, SourceOptions

__all__ = ["GitSource", "PollResult", "Snapshot", "SourceOptions", "redact"]
