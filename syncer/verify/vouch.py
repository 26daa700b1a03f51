"""Path scopes without a base: what a path-limited signer of the tip may vouch for on its own.

In head mode with no verified base revision (a first poll, a restart, a new replica with nothing
recorded) the tip's signer vouches only for the paths inside its scopes. Every other path of the tree
must hold exactly what the newest trusted commit whose signer covers that path held there: the
ancestors are walked newest first (at most ``WALK_LIMIT`` of them) and each path outside the tip's
scopes is decided by the first trusted commit covering it. A path that commit held differently, or
did not hold (added since), or that no trusted commit covering it was found for, is not vouched for.
The walk stops at the first trusted commit whose signer covers every path still undecided; paths that
commit held and the tip no longer holds (deleted since) are not vouched for either.
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
    todo = {p: oid for p, oid in mine.items() if outside([p], signer.paths)}
    if not todo:
        return ()
    bad: set[str] = set()
    for sha in repo.ancestors(tip, WALK_LIMIT):
        other = repo.trusted_signer(sha)
        if other is None:
            continue
        covered = [p for p in todo if not outside([p], other.paths)]
        if not covered:
            continue
        theirs = repo.blobs(sha)
        for path in covered:
            if theirs.get(path) != todo.pop(path):
                bad.add(path)
        if not todo:
            deleted = [
                p
                for p in theirs
                if p not in mine and outside([p], signer.paths) and not outside([p], other.paths)
            ]
            bad.update(deleted)
            break
    return tuple(sorted(bad | set(todo)))
