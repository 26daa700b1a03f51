from __future__ import annotations

from syncer.leader import LeaseRecord, LeaseVerdict, judge


def record(holder: str, duration: int = 15) -> LeaseRecord:
    return LeaseRecord(holder, duration, "2026-01-01T00:00:00.000000Z", "", 0, "42")


def test_no_lease_is_created() -> None:
    assert judge(None, "me", 0.0, 0.0) == LeaseVerdict.CREATE


def test_our_own_lease_is_renewed_even_if_it_looks_expired() -> None:
    assert judge(record("me"), "me", 0.0, 1000.0) == LeaseVerdict.RENEW


def test_a_held_lease_is_left_alone_until_it_expires_on_our_clock() -> None:
    other = record("other", duration=15)
    assert judge(other, "me", observed_at=100.0, now=100.0) == LeaseVerdict.WAIT
    assert judge(other, "me", observed_at=100.0, now=114.9) == LeaseVerdict.WAIT
    assert judge(other, "me", observed_at=100.0, now=115.0) == LeaseVerdict.ACQUIRE


def test_a_released_lease_is_taken_at_once() -> None:
    assert judge(record(""), "me", observed_at=100.0, now=100.0) == LeaseVerdict.ACQUIRE


def test_records_read_from_a_lease_object() -> None:
    lease = {
        "metadata": {"name": "x", "resourceVersion": "7"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 10, "leaseTransitions": 2, "renewTime": "t"},
    }
    assert LeaseRecord.from_lease(lease) == LeaseRecord("a", 10, "t", "", 2, "7")
    assert LeaseRecord.from_lease({"metadata": {}}) == LeaseRecord("", 0, "", "", 0, "")
