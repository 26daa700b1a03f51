"""Where a notification or an analysis query may go is judged at each send, after name resolution:
a host resolving to a link-local (metadata), unspecified or multicast address, in any written form,
is refused, counted and logged, unless the config allows the host by name.

Names are resolved by a resolver the test gives (no network, no /etc/hosts edits); the senders are
real (a courier's thread, a requests session) and, when allowed, reach a real local receiver."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from syncer.analysis import PrometheusSource
from syncer.config.notifications import NotificationConfig, Receiver, ReceiverKind, Route, Secret
from syncer.config.reach import refusal, system_resolve
from syncer.config.settings import NotifySettings
from syncer.domain.progress import PassEvent, Step
from syncer.notify.notifier import RESULTS, Notifier
from syncer.prom import PrometheusClient
from tests.support.receivers import Receiver as HttpReceiver

ANSWERS = {
    "metadata.example": ["169.254.169.254"],
    "mapped.example": ["10.1.2.3", "::ffff:169.254.169.254"],
    "zoned.example": ["fe80::1%eth0"],
    "nowhere.example": ["0.0.0.0"],
    "group.example": ["239.1.2.3"],
    "fine.example": ["10.1.2.3", "2001:db8::1"],
    "localhost": ["169.254.169.254"],  # as a hostile resolver could answer
}


def resolve(host: str, port: int) -> list[str]:
    if host not in ANSWERS:
        raise OSError(f"{host}: unknown")
    return ANSWERS[host]


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("metadata.example", "169.254.169.254"),
        ("mapped.example", "169.254.169.254"),
        ("zoned.example", "fe80::1"),
        ("nowhere.example", "0.0.0.0"),
        ("group.example", "239.1.2.3"),
    ],
)
def test_a_name_resolving_to_a_refused_address_is_refused_naming_the_address_not_the_url(
    host: str, address: str
) -> None:
    said = refusal(f"https://{host}/services/T0/B0/secret-path", (), resolve)
    assert f"resolves to {address}" in said
    assert "secret-path" not in said
    assert host not in said


def test_a_name_allowed_by_name_or_resolving_elsewhere_or_not_at_all_is_left_to_the_request() -> None:
    assert refusal("https://metadata.example/x", ("Metadata.Example",), resolve) == ""
    assert refusal("https://fine.example/x", (), resolve) == ""
    assert refusal("https://unknown.example/x", (), resolve) == ""


def test_the_system_resolver_judges_literal_forms_and_localhost() -> None:
    assert "169.254.169.254" in refusal("http://169.254.169.254/latest/meta-data", (), system_resolve)
    assert "169.254.169.254" in refusal("http://[::ffff:169.254.169.254]:80/", (), system_resolve)
    assert refusal("http://localhost:1/hook", (), system_resolve) == ""


@pytest.fixture
def local() -> Iterator[HttpReceiver]:
    receiver = HttpReceiver()
    try:
        yield receiver
    finally:
        receiver.close()


def _notifier(url: str, allow: frozenset[str]) -> tuple[Notifier, list[tuple[str, str]]]:
    receivers = {"ops": Receiver("ops", ReceiverKind.WEBHOOK, Secret("t", "k"), url=url)}
    config = NotificationConfig(receivers, (Route(("ops",)),), NotifySettings(retries=0, timeout=2), allow)
    counted: list[tuple[str, str]] = []
    notifier = Notifier(config, {}, lambda name, result: counted.append((name, result)))
    notifier.resolve = resolve
    return notifier, counted


def _sent(notifier: Notifier, counted: list[tuple[str, str]]) -> list[tuple[str, str]]:
    notifier(PassEvent(Step.ROLLOUT_STARTED, "canary", revision="a" * 40))
    deadline = time.monotonic() + 10
    while not counted and time.monotonic() < deadline:
        time.sleep(0.02)
    notifier.close(5)
    return counted


def test_a_receiver_whose_host_resolves_to_metadata_at_send_time_gets_nothing_and_it_is_counted_and_logged(
    local: HttpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    assert "refused" in RESULTS  # the counter is made at 0 for it
    port = local.url.rsplit(":", 1)[1]
    notifier, counted = _notifier(f"http://localhost:{port}/hook", frozenset())
    with caplog.at_level(logging.WARNING, logger="syncer.notify"):
        assert _sent(notifier, counted) == [("ops", "refused")]
    assert local.all() == []
    assert (
        "notification to ops refused: its host resolves to 169.254.169.254, a link-local address"
        in caplog.text
    )


def test_a_receiver_host_allowed_by_name_is_sent_to(local: HttpReceiver) -> None:
    port = local.url.rsplit(":", 1)[1]
    notifier, counted = _notifier(f"http://localhost:{port}/hook", frozenset({"localhost"}))
    assert _sent(notifier, counted) == [("ops", "sent")]
    assert [r.path for r in local.all()] == ["/hook"]


def test_a_prometheus_whose_host_resolves_to_metadata_is_not_asked_unless_allowed(tmp_path: Path) -> None:
    client = PrometheusClient(PrometheusSource("http://localhost:1"))
    client.resolve = resolve
    try:
        answer = client.query("up")
        assert answer.error.startswith("http://localhost:1 not asked: its host resolves to 169.254.169.254")
    finally:
        client.close()
    allowed = PrometheusClient(PrometheusSource("http://localhost:1", allow_hosts=("localhost",)))
    allowed.resolve = resolve
    try:
        assert "did not answer" in allowed.query("up").error  # asked: nothing listens on port 1
    finally:
        allowed.close()
