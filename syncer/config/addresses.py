"""Addresses syncer sends nothing to on its own (a notification, an analysis query): link-local,
unspecified and multicast, however written. Pure: ``syncer.config.reach`` judges where a host name
resolves at each send, with these rules.

A cloud's metadata service answers on 169.254.169.254 (also ``[::ffff:169.254.169.254]``) and
``fe80::/10``: a receiver or a Prometheus URL pointing there would hand a config's author the
machine's credentials. Literal addresses are refused when the config loads.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def written_address(text: str) -> IPAddress | None:
    """The IP address ``text`` is (brackets and an IPv6 zone dropped; an IPv4 address an IPv6 one
    maps), None for a name."""
    try:
        found = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def refused_kind(address: IPAddress) -> str:
    """Why syncer sends nothing to ``address`` ("" when it may)."""
    if address.is_link_local:
        return "link-local"
    if address.is_unspecified:
        return "unspecified"
    if address.is_multicast:
        return "multicast"
    return ""
