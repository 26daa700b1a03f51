"""Fixtures: fresh cluster-mode redis-servers per test module (or per test), killed and checked gone
at teardown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.topology.servers import RedisServers
from tests.integration.topology.traffic import stop_leftovers

PASSWORD = "s3cret-topology"


def _servers(tmp_path_factory: pytest.TempPathFactory, password: str | None) -> Iterator[RedisServers]:
    servers = RedisServers(tmp_path_factory.mktemp("redis"), password=password)
    try:
        yield servers
    finally:
        survivors = servers.stop()
        assert not survivors, f"redis-server processes still alive after teardown: {survivors}"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServers]:
    """A module's own set of redis-servers without auth; call ``start(n)`` to launch them."""
    yield from _servers(tmp_path_factory, None)


@pytest.fixture
def fresh_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServers]:
    """Redis-servers of one test alone (its addresses and files are its own), checked gone after it."""
    yield from _servers(tmp_path_factory, None)


@pytest.fixture(scope="module")
def auth_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServers]:
    """Like ``servers`` with ``requirepass`` and ``masterauth`` set to ``PASSWORD``."""
    yield from _servers(tmp_path_factory, PASSWORD)


@pytest.fixture(autouse=True)
def no_writer_outlives_its_test() -> Iterator[None]:
    """Stop a client writer its test left running (the test failed between ``start`` and ``stop``):
    it would go on writing into whatever cluster a later test builds on its servers' addresses, and
    that test would read its keys as lost. A test that leaves one running fails here."""
    yield
    left = stop_leftovers()
    assert not left, f"{left} traffic writer(s) still running after the test, stopped now"
