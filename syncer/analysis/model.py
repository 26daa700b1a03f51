"""The analysis policy as values: where each metric is queried, how it is judged, how often."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from syncer.guards.language import Program


class FirstRollout(StrEnum):
    """How a metric with ``baseline: previous`` is judged when no cluster of the fleet runs another
    revision to compare with (the fleet's first rollout): ``pass`` counts the measurement as a
    success and says why (the default: nothing ran before, so nothing can be worse than it);
    ``inconclusive`` halts the wave for a person, who moves it by changing the policy (a retry
    measures again, and finds no previous revision again)."""

    PASS = "pass"
    INCONCLUSIVE = "inconclusive"


class Baseline(StrEnum):
    """What ``baseline`` is in a metric's conditions.

    ``previous``: the same query over the clusters still on the previous revision, at the same time
    (their mean); ``before``: the same query over the measured cluster itself at the moment its apply
    began; ``none``: no baseline (a condition that uses it does not load).
    """

    NONE = "none"
    PREVIOUS = "previous"
    BEFORE = "before"


@dataclass(frozen=True)
class PrometheusSource:
    """One Prometheus: its base URL, the CA bundle that verifies its certificate (empty: the system's),
    and a file holding the bearer token sent to it (empty: none); ``allow_hosts``: host names it may
    be asked at whatever they resolve to (``allowHosts``; else never a link-local, unspecified or
    multicast address)."""

    url: str
    ca_file: str = ""
    token_file: str = ""
    allow_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class WebSource:
    """Where a ``provider: web`` metric asks for its number: ``url`` (a template with the query's
    arguments, each URL-quoted), by ``method`` (GET or POST, ``body`` sent with POST, its arguments
    JSON-escaped), the number at ``path`` (``syncer.analysis.jsonpath``) of the JSON answer, within
    ``timeout`` seconds; ``ca_file``, ``token_file`` and ``allow_hosts`` as a Prometheus' are."""

    url: str
    path: tuple[str | int, ...]
    timeout: float
    method: str = "GET"
    body: str = ""
    ca_file: str = ""
    token_file: str = ""
    allow_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricSpec:
    """One named metric of an analysis.

    ``query`` is a PromQL template (``${cluster}``, ``${namespace}``, ``${name}``, ``${revision}``,
    ``${wave}``); it must give one number. It is measured ``count`` times, every ``interval`` seconds,
    the first ``initial_delay`` seconds after the analysis starts. A measurement fails when
    ``failure`` holds, succeeds when ``success`` holds (or when only ``failure`` is given and it does
    not hold); otherwise it is inconclusive. No answer, no series or NaN is inconclusive and a query
    error is an error: never a success. ``failure_limit``, ``inconclusive_limit`` and
    ``consecutive_error_limit`` are how many of each are tolerated; a ``dry_run`` metric is measured
    and reported but never decides.
    """

    name: str
    query: str
    success: Program | None = None
    failure: Program | None = None
    baseline: Baseline = Baseline.NONE
    interval: float = 60.0
    count: int = 1
    initial_delay: float = 0.0
    failure_limit: int = 0
    inconclusive_limit: int = 0
    consecutive_error_limit: int = 4
    dry_run: bool = False
    first_rollout: FirstRollout = FirstRollout.PASS
    web: WebSource | None = None

    @property
    def template(self) -> str:
        """The text its arguments are filled into: the query, or the web request's URL and body."""
        return self.query if self.web is None else self.web.url + self.web.body

    @property
    def threshold(self) -> str:
        """The conditions as people read them, shown next to each value."""
        parts = [f"success: {self.success.source}"] if self.success else []
        parts += [f"failure: {self.failure.source}"] if self.failure else []
        return "; ".join(parts)


@dataclass(frozen=True)
class AnalysisPolicy:
    """The metrics a wave is judged by, and the Prometheus they are queried from (``prometheus``;
    ``by_cluster``: the clusters that have their own)."""

    metrics: tuple[MetricSpec, ...] = ()
    prometheus: PrometheusSource | None = None
    by_cluster: tuple[tuple[str, PrometheusSource], ...] = ()
    folder: str = ""  # the policy's folder: a web metric's caFile and tokenFile are relative to it

    def source_for(self, cluster: str) -> PrometheusSource | None:
        """The Prometheus that measures ``cluster``."""
        return dict(self.by_cluster).get(cluster, self.prometheus)

    def describe(self) -> str:
        """One line naming the metrics, for ``syncer diff`` and logs."""
        if not self.metrics:
            return "none"
        return ", ".join(
            f"{m.name} ({m.count}x every {m.interval:g}s{', dry run' if m.dry_run else ''})"
            for m in self.metrics
        )
