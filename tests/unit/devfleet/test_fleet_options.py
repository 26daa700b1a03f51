"""Names, profiles and limits of a fleet as recorded and as asked for; no processes start here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devfleet import fleet as devfleet
from devfleet import memory, procs
from devfleet.components import Profile


def test_clusters_by_count_get_sortable_names() -> None:
    assert devfleet.cluster_names(3) == ("c-01", "c-02", "c-03")
    names = devfleet.cluster_names(120, "edge")
    assert names[0] == "edge-001"
    assert names[-1] == "edge-120"
    assert list(names) == sorted(names)
    with pytest.raises(ValueError, match="at least one"):
        devfleet.cluster_names(0)


def test_the_default_timeout_grows_with_the_fleet() -> None:
    assert devfleet.UpOptions(clusters=("a",)).seconds() == 195.0
    assert devfleet.UpOptions(clusters=devfleet.cluster_names(100)).seconds() == 1680.0
    assert devfleet.UpOptions(timeout=30.0).seconds() == 30.0


def test_up_refuses_repeated_names_before_starting_anything(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unique"):
        devfleet.up(tmp_path / "state", devfleet.UpOptions(clusters=("a", "a")), say=lambda _: None)
    assert not (tmp_path / "state").exists()


def test_the_profile_is_recorded_and_older_state_files_mean_full(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    made = devfleet.Fleet(root, [devfleet.Cluster("c-01", 1, root / "c-01", Profile.LIGHT)], [], 2)
    made.save()
    loaded = devfleet.Fleet.load(root)
    assert loaded is not None
    assert loaded.cluster("c-01").profile is Profile.LIGHT
    assert loaded.cluster("c-01").components == ("kube-apiserver",)
    data = json.loads(made.state_file.read_text())
    del data["clusters"][0]["profile"]
    made.state_file.write_text(json.dumps(data))
    older = devfleet.Fleet.load(root)
    assert older is not None
    assert older.cluster("c-01").profile is Profile.FULL


def test_a_light_cluster_has_no_controller_manager_to_stop(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    made = devfleet.Fleet(root, [devfleet.Cluster("c-01", 1, root / "c-01", Profile.LIGHT)], [], 2)
    with pytest.raises(KeyError, match="light cluster 'c-01' runs kube-apiserver"):
        made.stop_component("c-01", "kube-controller-manager", lambda _: None)


def test_memory_is_summed_per_cluster_and_averaged_per_profile(tmp_path: Path) -> None:
    root = tmp_path / "state"
    clusters = [
        devfleet.Cluster("c-01", 1, root / "c-01", Profile.LIGHT),
        devfleet.Cluster("c-02", 2, root / "c-02", Profile.LIGHT),
        devfleet.Cluster("big", 3, root / "big", Profile.FULL),
    ]
    started = []
    for c in clusters:
        (c.root / "logs").mkdir(parents=True)
        names = c.components
        started += [procs.spawn(n, ["sleep", "60"], c.files.log(n), c.root) for n in names]
    try:
        made = devfleet.Fleet(root, clusters, started, 4)
        rows = {r.cluster: r for r in memory.per_cluster(made)}
        assert rows["c-01"].processes == 1
        assert rows["big"].processes == 4
        assert all(r.rss_kib > 0 and 0 < r.pss_kib <= r.rss_kib for r in rows.values())
        summaries = {s.profile: s for s in memory.summarize(list(rows.values()))}
        assert summaries["light"].clusters == 2
        assert summaries["full"].clusters == 1
        light_mean = (rows["c-01"].rss_kib + rows["c-02"].rss_kib) / 2 / 1024
        assert summaries["light"].mean_rss == pytest.approx(light_mean)
    finally:
        procs.stop(started)


def test_up_with_redis_refuses_a_fleet_already_up_without_it(tmp_path: Path) -> None:
    root = tmp_path / "state"
    cluster = devfleet.Cluster("c-01", 1, root / "c-01", Profile.FULL)
    (cluster.root / "logs").mkdir(parents=True)
    running = [
        procs.spawn(n, ["sleep", "60"], cluster.files.log(n), cluster.root) for n in cluster.components
    ]
    try:
        devfleet.Fleet(root, [cluster], running, 2).save()
        with pytest.raises(ValueError, match="up without --redis") as refused:
            devfleet.up(root, devfleet.UpOptions(clusters=("c-01",), redis=True), say=lambda _: None)
        assert "run `syncer-fleet down`, then `syncer-fleet up --redis`" in str(refused.value)
        with pytest.raises(ValueError, match="up without --loopback-pods"):
            devfleet.up(root, devfleet.UpOptions(clusters=("c-01",), loopback_pods=True), say=lambda _: None)
        said: list[str] = []
        assert devfleet.up(root, devfleet.UpOptions(clusters=("c-01",)), say=said.append).root == root
        assert said == [f"fleet at {root} is already up"], "asked for nothing it lacks: returned as it is"
        assert all(p.alive() for p in running), "a refusal stops nothing"
    finally:
        assert procs.stop(running) == []
