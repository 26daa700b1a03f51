"""A web metric's request: an HTTP(S) GET or POST answered with JSON, the number at its JSON path.

Every failure is an answer with an error, never an exception and never a value: a refused host, an
unreadable token or CA file, no answer within the metric's timeout, a redirect (not followed: its
target was never judged), an HTTP error status, an answer too long or not JSON. The URL is judged
after name resolution at each request as a Prometheus' is (``syncer.config.reach``); the token and
CA files are read through the strict reader at each request.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from syncer.analysis import QueryAnswer, QueryArgs, WebSource
from syncer.analysis.jsonpath import pick
from syncer.analysis.query import fill, json_escaped, url_quoted
from syncer.config.loading import read_agent_file
from syncer.config.reach import Resolve, refusal, system_resolve
from syncer.config.settings import MAX_WEB_ANSWER_BYTES
from syncer.errors import ConfigError


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx becomes an HTTPError: its target is not asked


def _opener(source: WebSource) -> urllib.request.OpenerDirector:
    context = ssl.create_default_context()
    if source.ca_file:
        context = ssl.create_default_context(cadata=read_agent_file(Path(source.ca_file)).decode("ascii"))
    return urllib.request.build_opener(_NoRedirect(), urllib.request.HTTPSHandler(context=context))


def _request(source: WebSource, url: str, args: QueryArgs) -> urllib.request.Request:
    headers = {"Accept": "application/json"}
    if source.token_file:
        token = read_agent_file(Path(source.token_file)).decode("utf-8", "replace").strip()
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if source.method == "POST":
        data = fill(source.body, args, json_escaped).encode()
        headers["Content-Type"] = "application/json"
    return urllib.request.Request(url, data=data, headers=headers, method=source.method)


def fetch_web(source: WebSource, args: QueryArgs, resolve: Resolve = system_resolve) -> QueryAnswer:
    """The number ``source`` answers for ``args`` now."""
    url = fill(source.url, args, url_quoted)
    host = urlsplit(url).netloc.rpartition("@")[2]  # named in errors: never the path or credentials
    refused = refusal(url, source.allow_hosts, resolve)
    if refused:
        return QueryAnswer(error=f"{host} not asked: {refused} (web.allowHosts)")
    try:
        opener, request = _opener(source), _request(source, url, args)
    except (ConfigError, ssl.SSLError, ValueError) as err:
        return QueryAnswer(error=f"the request to {host} could not be made: {err}")
    try:
        with opener.open(request, timeout=source.timeout) as response:
            raw = response.read(MAX_WEB_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as err:
        err.close()
        return QueryAnswer(error=f"{host} answered HTTP {err.code}")
    except (urllib.error.URLError, OSError, ValueError) as err:
        return QueryAnswer(
            error=f"{host} did not answer (timeout {source.timeout:g}s): {type(err).__name__}: {err}"
        )
    if len(raw) > MAX_WEB_ANSWER_BYTES:
        return QueryAnswer(error=f"{host} answered more than {MAX_WEB_ANSWER_BYTES} bytes")
    try:
        document = json.loads(raw)
    except ValueError:
        return QueryAnswer(error=f"{host} answered something that is not JSON")
    value, why = pick(document, source.path)
    return QueryAnswer(value=value) if value is not None else QueryAnswer(missing=why)
