"""No-change poll vs fresh clone, side by side, against a local bare repository with real history.

Run: ``python bench/bench_poll.py [--commits 400] [--files 300] [--runs 15]``. Builds the repository
with ``git fast-import`` in a temporary folder, then measures (median of ``--runs``):

* a no-change poll of a warm cache (``git ls-remote``, no fetch);
* a poll that fetches one new commit incrementally;
* a fresh clone of the same repository (a new cache each run). A repository on this machine is
  always cloned whole through git's transport (never partially, never by hard-linking objects), so
  this is an upper bound of the partial clone a network remote gets.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from syncer.source import GitSource, SourceOptions

GOAL_SECONDS = 0.100
_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
}


def build_remote(root: Path, commits: int, files: int) -> Path:
    """A bare repository with ``commits`` commits over ``files`` manifest files, via git fast-import."""
    bare = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True, env=_ENV)
    chunks: list[str] = []
    for n in range(commits):
        when = 1_700_000_000 + n * 60
        message = f"change {n}"
        chunks.append(
            f"commit refs/heads/main\nmark :{n + 1}\n"
            f"committer Bench <bench@example.org> {when} +0000\n"
            f"data {len(message)}\n{message}\n"
        )
        if n:
            chunks.append(f"from :{n}\n")
        touched = range(files) if n == 0 else {(n * 7 + k) % files for k in range(3)}
        for f in touched:
            body = (
                "apiVersion: redis.example.org/v1\nkind: RedisCluster\n"
                f"metadata:\n  name: c{f}\nspec:\n  replicas: {n % 5 + 1}\n"
            )
            chunks.append(f"M 100644 inline clusters/cluster-{f:03d}/redis.yaml\ndata {len(body)}\n{body}\n")
    subprocess.run(
        ["git", "fast-import", "--quiet"], input="".join(chunks).encode(), cwd=bare, check=True, env=_ENV
    )
    return bare


def push_one(bare: Path, root: Path, n: int) -> None:
    """One more commit on ``main`` of the bare repository (changing one file)."""
    tip = subprocess.run(
        ["git", "rev-parse", "main"], cwd=bare, check=True, capture_output=True, text=True, env=_ENV
    ).stdout.strip()
    body = f"bench extra {n}\n"
    stream = (
        f"commit refs/heads/main\ncommitter Bench <bench@example.org> {1_800_000_000 + n} +0000\n"
        f"data 5\nextra\nfrom {tip}\nM 100644 inline extra.txt\ndata {len(body)}\n{body}\n"
    )
    subprocess.run(["git", "fast-import", "--quiet"], input=stream.encode(), cwd=bare, check=True, env=_ENV)


def median_seconds(
    runs: int, action: Callable[[int], object], before: Callable[[int], object] | None = None
) -> float:
    samples = []
    for i in range(runs):
        if before is not None:
            before(i)
        start = time.perf_counter()
        action(i)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--commits", type=int, default=400)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-poll-") as tmp:
        root = Path(tmp)
        bare = build_remote(root, args.commits, args.files)
        url = f"file://{bare}"
        warm = GitSource(SourceOptions(url=url, cache_dir=root / "warm"))
        warm.poll()

        def no_change(_: int) -> None:
            if warm.poll().fetched:
                raise RuntimeError("a poll of an unchanged remote fetched")

        poll = median_seconds(args.runs, no_change)
        fetch = median_seconds(args.runs, lambda _: warm.poll(), before=lambda i: push_one(bare, root, i))
        clone = median_seconds(
            args.runs, lambda i: GitSource(SourceOptions(url=url, cache_dir=root / f"fresh-{i}")).poll()
        )
    print(f"repository: {args.commits} commits, {args.files} files; median of {args.runs} runs")
    print(f"{'no-change poll (ls-remote, no fetch)':<40}{poll * 1000:>10.1f} ms")
    print(f"{'poll with incremental fetch (1 commit)':<40}{fetch * 1000:>10.1f} ms")
    print(f"{'fresh clone (whole)':<40}{clone * 1000:>10.1f} ms")
    print(
        f"fresh clone / no-change poll: {clone / poll:.1f}x; "
        f"fresh clone / incremental fetch: {clone / fetch:.1f}x"
    )
    verdict = "met" if poll < GOAL_SECONDS else "NOT met"
    print(f"goal no-change poll < {GOAL_SECONDS * 1000:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
