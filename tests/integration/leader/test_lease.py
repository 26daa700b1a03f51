"""Leader election over a real Lease: one holder at a time, release hands over, expiry takes over."""

from __future__ import annotations

import threading

import pytest

from syncer.config.settings import LeaseSettings
from syncer.kube import ClusterClient
from syncer.leader import LeaderElector

pytestmark = pytest.mark.integration


def elector(kube: ClusterClient, namespace: str, identity: str, duration: float = 15.0) -> LeaderElector:
    return LeaderElector(
        kube, LeaseSettings("lock", namespace, duration=duration, retry_period=0.2), identity
    )


def test_one_holder_at_a_time_and_release_hands_over(kube: ClusterClient, namespace: str) -> None:
    a, b = elector(kube, namespace, "a"), elector(kube, namespace, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.try_acquire_or_renew()  # renewal
    lease = kube.get("coordination.k8s.io/v1", "Lease", "lock", namespace)
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    a.release()
    assert b.try_acquire_or_renew()
    lease = kube.get("coordination.k8s.io/v1", "Lease", "lock", namespace)
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 1)
    assert not a.try_acquire_or_renew()


def test_a_lease_nobody_renews_is_taken_over_after_it_expires(kube: ClusterClient, namespace: str) -> None:
    a, b = elector(kube, namespace, "a", duration=1), elector(kube, namespace, "b", duration=1)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b starts its own clock on the lease now
    stop = threading.Event()
    led: list[str] = []

    def lead(stop_leading: threading.Event) -> None:
        led.append("b")
        stop.set()

    assert b.run(stop, lead)
    assert led == ["b"]
    lease = kube.get("coordination.k8s.io/v1", "Lease", "lock", namespace)
    assert lease["spec"].get("holderIdentity", "") == ""  # b released it when done


def test_run_returns_without_leading_when_stopped_first(kube: ClusterClient, namespace: str) -> None:
    holder = elector(kube, namespace, "holder")
    assert holder.try_acquire_or_renew()
    stop = threading.Event()
    timer = threading.Timer(0.5, stop.set)
    timer.start()
    assert not elector(kube, namespace, "waiter").run(stop, lambda s: None)
    timer.join()
