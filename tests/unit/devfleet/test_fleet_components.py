"""Stopping and starting one cluster's component: exactly that process, recorded so that status and down
keep working. Real processes (sleep) stand in for the components; the apiserver case is an
integration test on the real fleet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import fleet as devfleet
from devfleet import procs


def _component(cluster: devfleet.Cluster, name: str) -> procs.Proc:
    (cluster.root / "logs").mkdir(parents=True, exist_ok=True)
    return procs.spawn(name, ["sleep", "300"], cluster.files.log(name), cluster.root)


@pytest.fixture
def small_fleet(tmp_path: Path) -> Iterator[devfleet.Fleet]:
    root = tmp_path / "state"
    root.mkdir()
    clusters = [devfleet.Cluster(n, 1, root / n) for n in ("eu-1", "us-1")]
    started = [_component(c, name) for c in clusters for name in ("kube-scheduler", "kwok")]
    made = devfleet.Fleet(root, clusters, started, 2)
    made.save()
    yield made
    procs.stop(made.processes + started)


def _quiet(_: str) -> None:
    pass


def test_stop_ends_exactly_that_component_and_status_shows_it(small_fleet: devfleet.Fleet) -> None:
    stopped = small_fleet.stop_component("eu-1", "kube-scheduler", _quiet)
    assert not stopped.alive()
    rows = {(cluster, name): alive for cluster, name, _, alive in devfleet.status(small_fleet.root)}
    assert rows == {
        ("eu-1", "kube-scheduler"): False,
        ("eu-1", "kwok"): True,
        ("us-1", "kube-scheduler"): True,
        ("us-1", "kwok"): True,
    }
    # Stopping it again changes nothing.
    assert small_fleet.stop_component("eu-1", "kube-scheduler", _quiet) == stopped


def test_start_records_the_new_process_where_the_old_one_was(small_fleet: devfleet.Fleet) -> None:
    before = list(small_fleet.processes)
    old = small_fleet.stop_component("us-1", "kwok", _quiet)
    new = small_fleet.start_component("us-1", "kwok", _quiet)
    assert new.alive()
    assert new.pid != old.pid
    assert (new.argv, new.log, new.cwd) == (old.argv, old.log, old.cwd)
    index = before.index(old)
    assert small_fleet.processes[index] == new
    recorded = devfleet.Fleet.load(small_fleet.root)
    assert recorded is not None
    assert recorded.processes == small_fleet.processes
    assert all(alive for *_, alive in devfleet.status(small_fleet.root))
    # Starting a running component changes nothing.
    assert small_fleet.start_component("us-1", "kwok", _quiet) == new


def test_down_stops_a_restarted_component(small_fleet: devfleet.Fleet) -> None:
    small_fleet.stop_component("eu-1", "kwok", _quiet)
    new = small_fleet.start_component("eu-1", "kwok", _quiet)
    assert devfleet.down(small_fleet.root, _quiet) == []
    assert not new.alive()
    assert not [p for p in small_fleet.processes if p.alive()]
    assert not small_fleet.root.exists()


def test_the_module_functions_work_from_the_state_directory(small_fleet: devfleet.Fleet) -> None:
    devfleet.stop_component(small_fleet.root, "eu-1", "kwok", _quiet)
    new = devfleet.start_component(small_fleet.root, "eu-1", "kwok", _quiet)
    recorded = devfleet.Fleet.load(small_fleet.root)
    assert recorded is not None
    assert recorded.component("eu-1", "kwok") == new
    small_fleet.processes[:] = recorded.processes  # so the fixture stops the new process


def test_only_a_recorded_component_of_a_known_cluster_is_accepted(small_fleet: devfleet.Fleet) -> None:
    with pytest.raises(KeyError, match="no cluster"):
        small_fleet.stop_component("ap-1", "kwok", _quiet)
    with pytest.raises(KeyError, match="not a component of a cluster"):
        small_fleet.stop_component("eu-1", "etcd", _quiet)
    with pytest.raises(KeyError, match="no kube-apiserver recorded"):
        small_fleet.stop_component("eu-1", "kube-apiserver", _quiet)
    with pytest.raises(FileNotFoundError):
        devfleet.stop_component(small_fleet.root / "elsewhere", "eu-1", "kwok", _quiet)
    assert all(p.alive() for p in small_fleet.processes)
