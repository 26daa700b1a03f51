"""Where a request syncer makes on its own (a notification, an analysis query) may go, judged at each
send: its host is resolved and refused when any address is one ``syncer.config.addresses`` refuses,
unless the config allows the host by name (``allowHosts``), since what a name resolves to can change
after start. The name is judged, then the request resolves it again to connect: a name whose answer
changes between the two (DNS rebinding) is not caught here.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Collection
from urllib.parse import urlsplit

from syncer.config.addresses import refused_kind, written_address

Resolve = Callable[[str, int], list[str]]
"""The addresses a host name resolves to for a port (``socket.getaddrinfo``; tests give their own)."""


def system_resolve(host: str, port: int) -> list[str]:
    """The addresses the system's resolver gives ``host`` (``OSError`` when it gives none)."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def refusal(url: str, allowed: Collection[str], resolve: Resolve = system_resolve) -> str:
    """Why a request to ``url`` must not be sent ("" when it may): its host resolves to an address
    ``refused_kind`` refuses and is not in ``allowed`` (host names, any case). A name that does not
    resolve is left to the request, which fails as it would. The text names the address, never the
    URL (a Slack URL is a secret)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host or host in {name.lower() for name in allowed}:
        return ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = resolve(host, port)
    except (OSError, ValueError, UnicodeError):
        return ""
    for text in addresses:
        address = written_address(text)
        kind = refused_kind(address) if address is not None else ""
        if kind:
            return f"its host resolves to {address}, a {kind} address (allow the host by name to send there)"
    return ""
