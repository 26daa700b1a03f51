"""Which connections a controller holding a Lease closes on a Redis server: only those of an older
holder of the same Lease."""

from __future__ import annotations

from dataclasses import dataclass

from syncer.controller.topology_client import client_name, superseded
from syncer.leader.fence import UNFENCED


@dataclass(frozen=True)
class Held:
    token: int
    lease: str = "default/syncer-controller"


def test_a_holder_names_its_connections_after_the_lease_and_its_token() -> None:
    assert client_name(Held(7)) == "syncer-controller/default/syncer-controller/7"
    assert client_name(UNFENCED) is None


def test_only_an_older_holder_of_the_same_lease_is_superseded() -> None:
    mine = Held(7)
    assert superseded("syncer-controller/default/syncer-controller/6", mine)
    assert superseded("syncer-controller/default/syncer-controller/1", mine)
    assert not superseded("syncer-controller/default/syncer-controller/7", mine)
    assert not superseded("syncer-controller/default/syncer-controller/8", mine)
    assert not superseded("syncer-controller/other/syncer-controller/1", mine)
    assert not superseded("syncer-controller/default/syncer-controller/x", mine)
    assert not superseded("someone-else", mine)
    assert not superseded("", mine)


def test_a_controller_without_a_lease_closes_nothing() -> None:
    assert not superseded("syncer-controller/default/syncer-controller/1", UNFENCED)
