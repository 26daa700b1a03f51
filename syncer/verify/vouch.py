"""Path scopes without a base: what a path-limited signer of the tip may vouch for on its own.

In head mode with no verified base revision (a first poll, a restart, a new replica with nothing
recorded) the tip's signer vouches only for the paths inside its scopes. Every other path of the tree
must hold exactly what the newest trusted commit whose signer covers that path held there: the
ancestors are walked newest first (at most ``WALK_LIMIT`` of them) and each path outside the tip's
scopes, of the tip's tree or of the trusted commit's, is decided by the first trusted commit covering
it. A path that commit held differently, did not hold (added since) or held and the tip does not
(deleted since), or that no trusted commit covering it was found for, is not vouched for. The walk
stops once every path of the tip is decided and a commit of an unrestricted signer was reached.
"""

from __future__ import annotations

from typing import Protocol

from syncer.config import Signer
from syncer.verify.scope import outside

WALK_LIMIT = 200


class _Repo(Protocol):
    def blobs(self, commit: str) -> dict[str, str]: ...

    def ancestors(self, tip: str, limit: int) -> list[str]: ...

    def trusted_signer(self, sha: str) -> Signer | None: ...


def unvouched(repo: _Repo, tip: str, signer: Signer) -> tuple[str, ...]:
    """The paths of ``tip``'s tree (and paths deleted from it) outside ``signer``'s scopes that no
    trusted signer covering them approved as they are; sorted, empty when every path is vouched for."""
    mine = repo.blobs(tip)
    todo = {p for p in mine if outside([p], signer.paths)}
    decided: set[str] = set()
    bad: set[str] = set()
    for sha in repo.ancestors(tip, WALK_LIMIT):
        other = repo.trusted_signer(sha)
        if other is None:
            continue
        theirs = repo.blobs(sha)
        candidates = (todo | set(theirs)) - decided
        for path in candidates:
            if outside([path], signer.paths) and not outside([path], other.paths):
                decided.add(path)
                if theirs.get(path) != mine.get(path):
                    bad.add(path)
        if todo <= decided and other.unrestricted:
            return tuple(sorted(bad))
    return tuple(sorted(bad | (todo - decided)))
