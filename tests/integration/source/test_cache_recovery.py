"""The source's cache after git processes died at the worst moment, on real repositories: a lock
file a killed git left behind is removed and polls work again without anyone deleting it; a lock a
live process may still own is left alone; two processes never work in one cache at once; only the
most recently used checkouts are kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from syncer.errors import SourceError
from tests.integration.source.test_git_source import Remote
from tests.integration.verify.kit import run

pytestmark = pytest.mark.integration


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    r = Remote(tmp_path)
    r.push("initial", {"clusters/a/redis.yaml": "replicas: 1\n"})
    return r


def kill_git_holding_a_ref_lock(git_dir: Path, ref: str, env: dict[str, str]) -> Path:
    """Start a real ``git update-ref --stdin`` transaction that locks ``ref`` and SIGKILL it while
    it holds the lock, as a deadline or a killed agent would; returns the lock file it left."""
    sha = run(["git", "rev-parse", ref], env=env, cwd=git_dir).strip()
    proc = subprocess.Popen(
        ["git", "update-ref", "--stdin"], cwd=git_dir, env=env, stdin=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None
    proc.stdin.write(f"start\nupdate {ref} {sha}\nprepare\n")
    proc.stdin.flush()
    lock = git_dir / f"{ref}.lock"
    deadline = time.monotonic() + 10
    while not lock.exists():
        assert time.monotonic() < deadline, "git never took the lock"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdin.close()
    assert lock.exists()
    return lock


def test_a_lock_left_by_a_killed_git_is_removed_and_polls_work_again(remote: Remote, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = remote.source(cache)
    first.poll()
    lock = kill_git_holding_a_ref_lock(first.git_dir, "refs/syncer/fetched", remote.work.env)
    new = remote.push("second", {"clusters/b/redis.yaml": "replicas: 2\n"})
    # The lock really blocks git: the same fetch syncer runs fails while it is there.
    failed = subprocess.run(
        ["git", "fetch", "--no-tags", "origin", "+refs/heads/main:refs/syncer/fetched"],
        cwd=first.git_dir,
        env=remote.work.env,
        check=False,
        capture_output=True,
        text=True,
    )
    assert failed.returncode != 0
    assert "lock" in failed.stderr

    # A new process (the agent restarted) finds it older than its own use of the cache.
    again = remote.source(cache)
    result = again.poll()
    assert (result.tip, result.changed) == (new, True)
    assert not lock.exists()


def test_a_lock_that_a_live_git_may_own_is_left_alone_until_the_git_deadline_has_passed(
    remote: Remote, tmp_path: Path
) -> None:
    source = remote.source(tmp_path / "cache", timeout=30.0)
    source.poll()
    lock = source.git_dir / "refs/syncer/fetched.lock"
    lock.write_text("")  # as if a git of this process were still updating the ref right now
    remote.push("second", {"clusters/b/redis.yaml": "replicas: 2\n"})
    with pytest.raises(SourceError, match=r"fetch .* failed: .*lock"):
        source.poll()
    assert lock.exists()
    # Once it is older than the git deadline no git of ours can still run: it goes.
    past = time.time() - 31
    os.utime(lock, (past, past))
    assert source.poll().changed
    assert not lock.exists()


def test_two_processes_never_work_in_one_cache_at_once(remote: Remote, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    remote.source(cache).poll()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(cache / ".syncer.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        old = time.time() - 3600
        lock = cache / "repo.git" / "packed-refs.lock"
        lock.write_text("")
        os.utime(lock, (old, old))
        other = remote.source(cache, timeout=1.0)
        with pytest.raises(SourceError, match="in use by another process"):
            other.poll()
        assert lock.exists(), "a lock file is never touched while another process may use the cache"
    finally:
        holder.kill()
        holder.wait(timeout=10)
        assert holder.stdout is not None
        holder.stdout.close()
    assert remote.source(cache).poll().tip
    assert not lock.exists()


def test_only_the_most_recently_used_checkouts_are_kept(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    revisions = [source.poll().tip]
    for n in range(5):
        revisions.append(remote.push(f"change {n}", {"clusters/a/redis.yaml": f"replicas: {n}\n"}))
        source.poll()
    # A folder an interrupted checkout left without its .git link goes too.
    (source.checkouts_dir / ("0" * 40)).mkdir(parents=True)
    for revision in revisions[:3]:
        source.checkout(revision)
        time.sleep(0.05)
    source.checkout(revisions[0])  # used again: most recent
    time.sleep(0.05)
    for revision in revisions[3:]:
        source.checkout(revision)
        time.sleep(0.05)
    kept = sorted(p.name for p in source.checkouts_dir.iterdir())
    assert kept == sorted([revisions[0], revisions[3], revisions[4], revisions[5]])
    listed = run(["git", "worktree", "list", "--porcelain"], env=remote.work.env, cwd=source.git_dir)
    assert sorted(line.split()[1] for line in listed.splitlines() if line.startswith("worktree ")) == sorted(
        [str(source.git_dir)] + [str(source.checkouts_dir / r) for r in kept]
    )
    assert (source.checkouts_dir / revisions[5] / "clusters/a/redis.yaml").read_text() == "replicas: 4\n"
