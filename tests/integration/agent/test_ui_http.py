"""The fleet page's endpoints on the agent's own listener, over a real loopback socket."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from syncer.agent.fleet_page import FleetPage
from syncer.agent.http import AgentServer, Endpoints
from syncer.agent.ui import CSP, PageRoutes
from syncer.config.settings import HttpSettings
from syncer.domain.progress import PassEvent, Step

pytestmark = pytest.mark.integration

NEW = "c" * 40


@pytest.fixture
def page() -> Iterator[tuple[AgentServer, FleetPage]]:
    fleet = FleetPage(["canary", "rest"], ["c1", "c2"], lambda: None)
    endpoints = Endpoints(
        registry=CollectorRegistry(),
        healthy=lambda: (True, "alive"),
        ready=lambda: (True, "ready"),
        hook_secret="s3cret",
        page=PageRoutes(fleet, "s3cret"),
    )
    server = AgentServer(endpoints, HttpSettings(port=0)).start()
    yield server, fleet
    fleet.close()
    server.stop()


def get(server: AgentServer, path: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", path)
    return conn.getresponse()


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/ui", "text/html"), ("/ui/page.js", "text/javascript"), ("/ui/page.css", "text/css")],
)
def test_the_page_and_its_assets_come_from_the_package_under_a_strict_policy(
    page: tuple[AgentServer, FleetPage], path: str, content_type: str
) -> None:
    answer = get(page[0], path)
    body = answer.read().decode()
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith(content_type)
    assert answer.headers["Content-Security-Policy"] == CSP
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert "http://" not in body
    assert "https://" not in body
    assert "innerHTML" not in body


def test_the_page_has_no_inline_script() -> None:
    from importlib import resources

    html = resources.files("syncer.agent").joinpath("static", "index.html").read_text()
    assert html.count("<script") == 1
    assert '<script src="/ui/page.js" defer></script>' in html
    assert "script-src 'self'" in CSP
    assert "unsafe-inline" not in CSP


def test_the_state_is_the_picture_as_json(page: tuple[AgentServer, FleetPage]) -> None:
    server, fleet = page
    fleet.tell(PassEvent(Step.APPLYING, "canary", "c1", NEW))
    answer = get(server, "/ui/state")
    state = json.loads(answer.read())
    assert answer.headers["Content-Security-Policy"] == CSP
    assert [w["state"] for w in state["waves"]] == ["applying", "pending"]
    assert state["rolling"]["short"] == NEW[:12]


def test_the_event_stream_sends_each_change_as_it_happens(page: tuple[AgentServer, FleetPage]) -> None:
    server, fleet = page
    answer = get(server, "/ui/events")
    assert answer.headers["Content-Type"] == "text/event-stream"

    def next_picture() -> dict[str, object]:
        while True:
            line = answer.readline()
            if line.startswith(b"data: "):
                picture: dict[str, object] = json.loads(line.removeprefix(b"data: "))
                return picture

    first = next_picture()
    timer = threading.Timer(0.2, fleet.tell, (PassEvent(Step.APPLYING, "canary", "c1", NEW),))
    timer.start()
    second = next_picture()
    timer.join()
    assert int(str(second["version"])) > int(str(first["version"]))
    assert second["rolling"] == {"sha": NEW, "short": NEW[:12], "signer": "", "subject": ""}
    answer.close()


def test_unknown_page_paths_are_404_and_the_probe_listener_has_no_page(
    page: tuple[AgentServer, FleetPage],
) -> None:
    assert get(page[0], "/ui/../metrics").status == 404
    assert get(page[0], "/ui/nothing").status == 404


def test_only_loopback_clients_or_the_bearer_secret_may_look() -> None:
    routes = PageRoutes(FleetPage([], [], lambda: None), "s3cret")
    assert routes.allowed("127.0.0.1", "")
    assert routes.allowed("::1", "")
    assert not routes.allowed("10.1.2.3", "")
    assert not routes.allowed("10.1.2.3", "Bearer wrong")
    assert routes.allowed("10.1.2.3", "Bearer s3cret")
    assert not PageRoutes(FleetPage([], [], lambda: None), "").allowed("10.1.2.3", "Bearer ")
