"""Commit signature verification with git under a pinned environment (OpenPGP and SSH). [I/O]

Owns: deciding whether a revision is trusted under the agent's trust policy, per commit, with
path-scoped signers (``verify_revision`` returns a ``VerificationResult``; ``require_trusted`` turns
a failure into a ``VerificationError`` naming the commit and the reason). Git's exit codes are never
the answer: GnuPG status lines and git's signature placeholders are parsed and the key fingerprint is
matched against the policy here; a git process that fails is an error, never a verdict. Must not:
take any trust from the repository it verifies (its git config, keys, files, replace refs or grafts),
nor fetch (not even lazily), check out or parse manifests.
"""

from syncer.verify.results import CommitVerdict, Verdict, VerificationResult, VerifyOptions
from syncer.verify.verifier import approve_clusters, verify_revision

__all__ = [
    "CommitVerdict",
    "Verdict",
    "VerificationResult",
    "VerifyOptions",
    "approve_clusters",
    "verify_revision",
]
