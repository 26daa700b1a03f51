"""Loopback pod ranges: one claim per range, taken over only from a dead owner, released by its owner."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devfleet import podrange


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_two_live_owners_get_different_ranges(tmp_path: Path) -> None:
    other = sleeper()
    try:
        first = podrange.claim(owner=other.pid, where=tmp_path)
        second = podrange.claim(where=tmp_path)
    finally:
        other.kill()
        other.wait()
    assert first.octet != second.octet
    assert first.cidr == f"127.{first.octet}.0.1/16"
    assert first.contains(f"127.{first.octet}.3.4")
    assert not first.contains(f"127.{second.octet}.3.4")
    assert not first.contains("not-an-ip")
    assert first.lock.read_text().split()[0] == str(other.pid)


def test_a_range_of_a_dead_owner_is_taken_over(tmp_path: Path) -> None:
    gone = sleeper()
    held = podrange.claim(owner=gone.pid, where=tmp_path)
    gone.kill()
    gone.wait()
    again = podrange.claim(where=tmp_path)
    assert again.octet == held.octet
    assert again.owner == os.getpid()
    # The dead owner's release does not remove the new owner's claim.
    assert podrange.release(held) is False
    assert again.lock.exists()
    assert podrange.release(again) is True
    assert not again.lock.exists()


def test_a_reused_pid_does_not_keep_a_claim(tmp_path: Path) -> None:
    """A lock naming a live PID with another start time is stale (the PID was reused)."""
    path = tmp_path / f"syncer-podrange-127.{podrange.FIRST_OCTET}.lock"
    path.write_text(f"{os.getpid()} 1\n")
    assert podrange.claim(where=tmp_path).octet == podrange.FIRST_OCTET


def test_garbage_in_a_lock_file_is_stale(tmp_path: Path) -> None:
    (tmp_path / f"syncer-podrange-127.{podrange.FIRST_OCTET}.lock").write_text("not a pid")
    assert podrange.claim(where=tmp_path).octet == podrange.FIRST_OCTET


def test_concurrent_claimers_never_share_a_range(tmp_path: Path) -> None:
    owners = [sleeper() for _ in range(8)]
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            claims = list(pool.map(lambda p: podrange.claim(owner=p.pid, where=tmp_path), owners))
        assert len({c.octet for c in claims}) == len(owners)
    finally:
        for p in owners:
            p.kill()
            p.wait()


def test_claims_from_separate_processes_never_share_a_range(tmp_path: Path) -> None:
    """Processes racing for a range each get their own (the flock guard serialises them)."""
    script = (
        "import sys, time; from pathlib import Path; from devfleet import podrange; "
        "r = podrange.claim(where=Path(sys.argv[1])); print(r.octet, flush=True); time.sleep(5)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, env=env)
        for _ in range(4)
    ]
    try:
        octets = [int((p.stdout.readline() if p.stdout else b"").strip() or -1) for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
    assert -1 not in octets
    assert len(set(octets)) == 4


def test_hand_over_moves_the_claim_and_refuses_a_dead_process(tmp_path: Path) -> None:
    held = podrange.claim(where=tmp_path)
    keeper = sleeper()
    try:
        moved = podrange.hand_over(held, keeper.pid)
        assert moved.owner == keeper.pid
        # Ours no longer: a second claim must pick another range while the keeper runs.
        assert podrange.claim(where=tmp_path).octet != held.octet
    finally:
        keeper.kill()
        keeper.wait()
    with pytest.raises(ValueError, match="no running process"):
        podrange.hand_over(moved, keeper.pid)


def test_no_free_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(podrange, "LAST_OCTET", podrange.FIRST_OCTET)
    podrange.claim(where=tmp_path)
    with pytest.raises(podrange.NoFreeRange):
        podrange.claim(where=tmp_path)


def test_clusters_sharing_a_range_each_take_their_own_part_of_it(tmp_path: Path) -> None:
    held = podrange.PodRange(70, tmp_path / "lock", os.getpid())
    assert held.cidr_of(0, 1) == held.cidr == "127.70.0.1/16"
    parts = [ipaddress.ip_network(held.cidr_of(i, 3), strict=False) for i in range(3)]
    assert [str(p) for p in parts] == ["127.70.0.0/18", "127.70.64.0/18", "127.70.128.0/18"]
    assert all(p.subnet_of(held.network) for p in parts)
    assert held.cidr_of(2, 3) == "127.70.128.1/18"
    with pytest.raises(ValueError, match="cluster 3 of 3"):
        held.cidr_of(3, 3)
