"""The ``notifications`` section of the agent config: receivers and the routes that feed them.

Three kinds of receiver: a generic ``webhook`` (a JSON body signed with HMAC-SHA256 in the
``X-Signature`` header, the key read from ``secretFile``), a ``slack``-compatible incoming webhook
(its URL is a secret, read from ``urlFile``) and a ``commit-status`` on a GitHub- or Gitea-compatible
forge (``POST {apiUrl}/repos/{repository}/statuses/{sha}``, the token read from ``tokenFile``).
Secrets are read at load (each file within the agent's file rules) and held only in ``Secret``
values, which never print. A route sends the notices of its ``events`` (all when absent) of
``minSeverity`` and above to its ``receivers``. Every problem is a ``ConfigError`` with file:line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from syncer.config.addresses import refused_kind, written_address
from syncer.config.loading import Fields
from syncer.config.settings import NotifySettings
from syncer.domain.notices import NoticeClass, Severity

DEFAULTS = NotifySettings()


class ReceiverKind(StrEnum):
    WEBHOOK = "webhook"
    SLACK = "slack"
    COMMIT_STATUS = "commit-status"


@dataclass(frozen=True)
class Secret:
    """A secret read from a file; its text is ``reveal()``-ed only where a request is built, and
    it prints as the file it came from."""

    source: str
    _value: str = field(repr=False, compare=False)

    def reveal(self) -> str:
        return self._value

    def __str__(self) -> str:
        return f"<secret from {self.source}>"


@dataclass(frozen=True)
class Receiver:
    """Where notices go. ``url`` is the webhook's URL (``webhook``) or the forge's API base
    (``commit-status``); ``secret`` the HMAC key, the Slack URL or the forge token;
    ``repository`` (``owner/name``), ``context`` and ``target_url`` are the commit status's."""

    name: str
    kind: ReceiverKind
    secret: Secret
    url: str = ""
    repository: str = ""
    context: str = "syncer"
    target_url: str = ""


@dataclass(frozen=True)
class Route:
    """Notices of ``events`` (empty: every class) at ``min_severity`` or above go to ``receivers``."""

    receivers: tuple[str, ...]
    events: frozenset[NoticeClass] = frozenset()
    min_severity: Severity = Severity.INFO

    def takes(self, kind: NoticeClass, severity: Severity) -> bool:
        return (not self.events or kind in self.events) and severity.rank >= self.min_severity.rank


@dataclass(frozen=True)
class NotificationConfig:
    """The receivers by name, the routes, and the bounds and the fold window (defaults in
    ``syncer.config.settings.NotifySettings``)."""

    receivers: Mapping[str, Receiver] = field(default_factory=dict)
    routes: tuple[Route, ...] = ()
    settings: NotifySettings = DEFAULTS
    allow_hosts: frozenset[str] = frozenset()
    """Host names a receiver may reach whatever they resolve to (``allowHosts``): a relay on a
    link-local address someone chose on purpose."""

    def receivers_for(self, kind: NoticeClass, severity: Severity) -> tuple[Receiver, ...]:
        """Each receiver some route sends a notice of ``kind`` and ``severity`` to, once."""
        names = dict.fromkeys(n for r in self.routes if r.takes(kind, severity) for n in r.receivers)
        return tuple(self.receivers[n] for n in names)


def _http_url(entry: Fields, key: str, value: str, *, tls: bool = False) -> str:
    """``value`` as a receiver's URL: http or https without credentials, never to a link-local,
    unspecified or multicast address (a cloud's metadata service answers on 169.254.169.254, also
    written ``[::ffff:169.254.169.254]``); with ``tls``, https unless it is a loopback address."""
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise entry.error(key, "must be an http:// or https:// URL")
    if parts.password or parts.username:
        raise entry.error(key, "must not hold credentials; put them in a file the receiver names")
    address = written_address(parts.hostname or "")
    if address is not None and refused_kind(address):
        raise entry.error(key, f"must not point at {address}: a link-local, unspecified or multicast address")
    if tls and parts.scheme != "https" and not (address is not None and address.is_loopback):
        raise entry.error(key, "must be an https:// URL (plain http only to a loopback address)")
    return value.rstrip("/")


def _secret(entry: Fields, key: str, base: Path) -> Secret:
    path = base / entry.string(key)
    try:
        text = entry.read_file(key, path).decode("utf-8").strip()
    except UnicodeDecodeError:
        raise entry.error(key, f"{path} is not UTF-8 text") from None
    if not text:
        raise entry.error(key, f"{path} is empty")
    return Secret(f"{entry.path_of(key)} ({path.name})", text)


def _receiver(entry: Fields, base: Path) -> Receiver:
    name = entry.string("name")
    kind_text = entry.string("type")
    try:
        kind = ReceiverKind(kind_text)
    except ValueError:
        known = ", ".join(k.value for k in ReceiverKind)
        raise entry.error("type", f"{kind_text!r} is not a receiver type ({known})") from None
    if kind is ReceiverKind.WEBHOOK:
        entry.reject_unknown({"name", "type", "url", "secretFile"})
        return Receiver(
            name, kind, _secret(entry, "secretFile", base), _http_url(entry, "url", entry.string("url"))
        )
    if kind is ReceiverKind.SLACK:
        entry.reject_unknown({"name", "type", "urlFile"})
        secret = _secret(entry, "urlFile", base)
        _http_url(entry, "urlFile", secret.reveal(), tls=True)
        return Receiver(name, kind, secret)
    entry.reject_unknown({"name", "type", "apiUrl", "repository", "tokenFile", "context", "targetUrl"})
    repository = entry.string("repository")
    if repository.count("/") != 1 or any(not part or part in {".", ".."} for part in repository.split("/")):
        raise entry.error("repository", f"{repository!r} is not owner/name")
    target = _http_url(entry, "targetUrl", entry.string("targetUrl")) if entry.has("targetUrl") else ""
    return Receiver(
        name,
        kind,
        _secret(entry, "tokenFile", base),
        _http_url(entry, "apiUrl", entry.string("apiUrl", "https://api.github.com")),
        repository=repository,
        context=entry.string("context", "syncer"),
        target_url=target,
    )


def _route(entry: Fields, receivers: Mapping[str, Receiver]) -> Route:
    entry.reject_unknown({"receivers", "events", "minSeverity"})
    names = entry.strings("receivers", ())
    if not names:
        raise entry.error("receivers", "is required: the receivers this route sends to")
    for name in names:
        if name not in receivers:
            raise entry.error("receivers", f"no receiver is named {name!r}")
    events: set[NoticeClass] = set()
    for text in entry.strings("events", ()):
        try:
            events.add(NoticeClass(text))
        except ValueError:
            known = ", ".join(c.value for c in NoticeClass)
            raise entry.error("events", f"{text!r} is not an event class ({known})") from None
    severity_text = entry.string("minSeverity", Severity.INFO.value)
    try:
        severity = Severity(severity_text)
    except ValueError:
        raise entry.error("minSeverity", f"{severity_text!r} is not info, warning or error") from None
    return Route(names, frozenset(events), severity)


def load_notifications(section: Fields, raw: Any, base: Path) -> NotificationConfig:
    """The ``notifications`` section (``section`` its fields, ``raw`` its value; absent: none);
    files are relative to ``base``."""
    if raw is None:
        return NotificationConfig()
    section.reject_unknown(
        {
            "receivers",
            "routes",
            "foldSeconds",
            "unreachableAfterSeconds",
            "windowWaitAfterSeconds",
            "allowHosts",
        }
    )
    receivers: dict[str, Receiver] = {}
    for index in range(len(section.items("receivers"))):
        entry = section.child("receivers", index)
        receiver = _receiver(entry, base)
        if receiver.name in receivers:
            raise entry.error("name", f"a receiver named {receiver.name!r} is defined twice")
        receivers[receiver.name] = receiver
    routes = tuple(_route(section.child("routes", i), receivers) for i in range(len(section.items("routes"))))
    if receivers and not routes:
        raise section.error("routes", "is required when receivers are given: no notice would reach them")
    settings = NotifySettings(
        fold_window=section.number("foldSeconds", DEFAULTS.fold_window),
        unreachable_after=_seconds(section, "unreachableAfterSeconds", DEFAULTS.unreachable_after),
        window_wait_after=_seconds(section, "windowWaitAfterSeconds", DEFAULTS.window_wait_after),
    )
    allow = frozenset(name.strip().lower() for name in section.strings("allowHosts", ()))
    if any(not name or written_address(name) is not None for name in allow):
        raise section.error("allowHosts", "lists host names (an address is refused whatever the list says)")
    return NotificationConfig(receivers, routes, settings, allow)


def _seconds(section: Fields, key: str, default: float) -> float:
    """A bound in seconds, 0 allowed (notify at once)."""
    value = section.raw(key)
    if value == 0 and not isinstance(value, bool):
        return 0.0
    return section.number(key, default)
