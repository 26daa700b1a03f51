"""One Prometheus asked for instant queries; every failure is an answer with an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests

from syncer.analysis import PrometheusSource, QueryAnswer, read_answer
from syncer.config.loading import read_agent_file
from syncer.config.reach import Resolve, refusal, system_resolve
from syncer.config.settings import PROMETHEUS_TIMEOUT
from syncer.errors import ConfigError


class PrometheusClient:
    """Instant queries to one Prometheus (``source``); the token file is read at each query, so a
    rotated token is used at once."""

    def __init__(self, source: PrometheusSource, timeout: float = PROMETHEUS_TIMEOUT) -> None:
        self.source = source
        self.timeout = timeout
        self._session = requests.Session()
        # Given with each request: requests lets $REQUESTS_CA_BUNDLE replace a session's own bundle.
        self._verify: str | bool = source.ca_file or True
        self.resolve: Resolve = system_resolve  # where the host resolves, judged at each query

    def close(self) -> None:
        self._session.close()

    def query(self, promql: str, at: float | None = None) -> QueryAnswer:
        """The number ``promql`` gives now (or at ``at``, epoch seconds)."""
        params: dict[str, str] = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        try:
            headers = self._headers()
        except ConfigError as err:
            return QueryAnswer(error=f"the bearer token could not be read: {err}")
        refused = refusal(self.source.url, self.source.allow_hosts, self.resolve)
        if refused:
            return QueryAnswer(error=f"{self.source.url} not asked: {refused} (prometheus.allowHosts)")
        url = f"{self.source.url}/api/v1/query"
        try:
            response = self._session.post(
                url, data=params, headers=headers, timeout=self.timeout, verify=self._verify
            )
        except requests.RequestException as err:
            return QueryAnswer(error=f"{self.source.url} did not answer: {type(err).__name__}: {err}")
        try:
            body: Any = response.json()
        except ValueError:
            return QueryAnswer(error=f"{self.source.url} answered HTTP {response.status_code}, not JSON")
        if not isinstance(body, dict):
            return QueryAnswer(error=f"{self.source.url} answered HTTP {response.status_code}, not an object")
        return read_answer(body)

    def _headers(self) -> dict[str, str]:
        if not self.source.token_file:
            return {}
        token = read_agent_file(Path(self.source.token_file)).decode("utf-8", "replace").strip()
        return {"Authorization": f"Bearer {token}"}
