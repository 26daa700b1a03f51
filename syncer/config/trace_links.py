"""The agent config's ``tracing`` section: the URL template that turns a cluster's last trace id into
a link to the tracing backend (``tracing.urlTemplate``, such as
``https://jaeger.example/trace/{traceId}``), for ``syncer status -o json`` and the fleet page.

Checked at load: an http(s) URL with a host, holding ``{traceId}`` and no other brace, without
credentials (it is shown to whoever reads the page). Tracing itself is configured by the standard
``OTEL_`` variables (``syncer.tracing``); this only names where traces are looked at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from syncer.config.loading import Fields

PLACEHOLDER = "{traceId}"
_TRACE_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class TraceLinks:
    """``url_template`` "" (the default): no links, the trace id is shown alone."""

    url_template: str = ""

    def url(self, trace_id: str) -> str:
        """The link of ``trace_id`` (W3C: 32 lowercase hex digits); "" without a template or an id of
        that shape (never a URL built from anything else)."""
        if not self.url_template or not _TRACE_ID.fullmatch(trace_id):
            return ""
        return self.url_template.replace(PLACEHOLDER, trace_id)


def load_trace_links(section: Fields) -> TraceLinks:
    """The ``tracing`` section (``section``, empty when the config has none)."""
    section.reject_unknown({"urlTemplate"})
    if not section.has("urlTemplate"):
        return TraceLinks()
    template = section.string("urlTemplate")
    if PLACEHOLDER not in template:
        raise section.error("urlTemplate", f"must hold {PLACEHOLDER}, where the trace id goes")
    if "{" in template.replace(PLACEHOLDER, "") or "}" in template.replace(PLACEHOLDER, ""):
        raise section.error("urlTemplate", f"must hold no placeholder but {PLACEHOLDER}")
    if any(ch.isspace() or ord(ch) < 0x20 for ch in template):
        raise section.error("urlTemplate", "must hold no space or control character")
    try:
        parts = urlsplit(template.replace(PLACEHOLDER, "0" * 32))
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as err:
        raise section.error("urlTemplate", f"is not a URL: {err}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise section.error("urlTemplate", f"must be an http(s):// URL with a host, not {template!r}")
    if parts.username or parts.password:
        raise section.error("urlTemplate", "must hold no credentials: it is shown on the fleet page")
    return TraceLinks(template)
