"""The ``analysis`` sections of the rollout policy: metrics a wave is judged by, checked at load.

Each query template must use only known arguments and parse as PromQL; each condition must parse and
type-check as CEL over ``result`` and ``baseline`` (both numbers: write ``1.0``, not ``1``; or
``result`` as the list of series). Metrics may come from the policy's analysis templates, filled
with a wave's arguments (``syncer.config.templates``) and checked the same way. Any problem is a
``ConfigError`` naming the file, line and column, before any rollout.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from syncer.analysis import AnalysisPolicy, Baseline, MetricSpec, PrometheusSource, WebSource, check_query
from syncer.analysis.jsonpath import parse_path
from syncer.analysis.model import FirstRollout
from syncer.analysis.query import check_arguments, sample
from syncer.config.addresses import refused_kind, written_address
from syncer.config.loading import Fields
from syncer.config.settings import WEB_TIMEOUT
from syncer.config.templates import Template, Use, parse_uses
from syncer.domain.durations import parse_duration
from syncer.errors import ConfigError
from syncer.guards.language import CelProblem, Program, compile_expression

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?$")
_METRIC_KEYS = {
    "name", "query", "successCondition", "failureCondition", "baseline", "interval", "count",
    "duration", "initialDelay", "failureLimit", "inconclusiveLimit", "consecutiveErrorLimit", "dryRun",
    "firstRollout", "provider", "web",
}  # fmt: skip
_WEB_KEYS = {"url", "method", "body", "jsonPath", "timeout", "caFile", "tokenFile", "allowHosts"}
_PROVIDERS = ("prometheus", "web")


def _seconds(fields: Fields, key: str, default: float) -> float:
    if not fields.has(key):
        return default
    try:
        return parse_duration(fields.raw(key))
    except ValueError as err:
        raise fields.error(key, str(err)) from err


def _whole(fields: Fields, key: str, default: int, *, least: int = 0) -> int:
    value = fields.raw(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise fields.error(key, f"must be a whole number of at least {least}, not {value!r}")
    return value


def _where(fields: Fields, key: str, problem: CelProblem) -> str:
    """file:line:column of a CEL problem in the condition under ``key``: exact for a condition on the
    key's own line (plain), else the key's place and the place in the condition's text."""
    located = fields.located(key)
    match = re.match(r"^(.*):(\d+):(\d+)$", located)
    if match is None or problem.line != 1:
        return f"{located}: (line {problem.line}, column {problem.column} of the condition)"
    column = int(match.group(3)) + len(key) + 2 + problem.column - 1
    return f"{match.group(1)}:{match.group(2)}:{column}"


def _condition(fields: Fields, key: str, metric: str, baseline: Baseline) -> Program | None:
    if not fields.has(key):
        return None
    source = fields.raw(key)
    if not isinstance(source, str) or not source.strip():
        raise fields.error(key, "must be a CEL expression over result (and baseline) giving a bool")
    compiled = compile_expression(source.strip(), analysis=True)
    if isinstance(compiled, tuple):
        raise ConfigError(
            "\n".join(f"{_where(fields, key, p)}: metric {metric}: {key}: {p.message}" for p in compiled)
        )
    if baseline is Baseline.NONE and re.search(r"\bbaseline\b", source):
        raise fields.error(key, f"metric {metric} uses baseline but sets none (baseline: previous or before)")
    return compiled


def _metric(fields: Fields, folder: Path | None = None) -> MetricSpec:
    fields.reject_unknown(_METRIC_KEYS)
    name = fields.string("name")
    if not _NAME.match(name):
        raise fields.error("name", f"{name!r} must be lower-case letters, digits, '-' and '_'")
    provider = fields.string("provider", "prometheus")
    if provider not in _PROVIDERS:
        raise fields.error("provider", f"must be one of {', '.join(_PROVIDERS)}, not {provider!r}")
    web = _web(fields, name, folder) if provider == "web" else None
    if web is None and fields.has("web"):
        raise fields.error("web", f"metric {name}: web is for provider: web")
    query = "" if web is not None else fields.string("query")
    wrong = "" if web is not None else check_query(query)
    if wrong:
        raise fields.error("query", f"metric {name}: {wrong}")
    raw_baseline = fields.string("baseline", str(Baseline.NONE))
    if raw_baseline not in {str(b) for b in Baseline}:
        raise fields.error("baseline", f"must be one of {', '.join(Baseline)}, not {raw_baseline!r}")
    baseline = Baseline(raw_baseline)
    if web is not None and baseline is not Baseline.NONE:
        raise fields.error("baseline", f"metric {name}: a web metric has no baseline (it asks one endpoint)")
    success = _condition(fields, "successCondition", name, baseline)
    failure = _condition(fields, "failureCondition", name, baseline)
    if success is None and failure is None:
        raise fields.error(
            "successCondition", f"metric {name}: give successCondition, failureCondition or both"
        )
    interval = _seconds(fields, "interval", MetricSpec.interval)
    if fields.has("count") and fields.has("duration"):
        raise fields.error("duration", "give count or duration, not both")
    count = _whole(fields, "count", MetricSpec.count, least=1)
    if fields.has("duration"):
        count = max(1, int(_seconds(fields, "duration", 0.0) // interval))
    return MetricSpec(
        name=name,
        query=query,
        success=success,
        failure=failure,
        baseline=baseline,
        interval=interval,
        count=count,
        initial_delay=_seconds(fields, "initialDelay", MetricSpec.initial_delay),
        failure_limit=_whole(fields, "failureLimit", MetricSpec.failure_limit),
        inconclusive_limit=_whole(fields, "inconclusiveLimit", MetricSpec.inconclusive_limit),
        consecutive_error_limit=_whole(fields, "consecutiveErrorLimit", MetricSpec.consecutive_error_limit),
        dry_run=fields.boolean("dryRun", MetricSpec.dry_run),
        first_rollout=_first_rollout(fields),
        web=web,
    )


def _web(metric: Fields, name: str, folder: Path | None) -> WebSource:
    """The ``web`` section of a ``provider: web`` metric, checked now."""
    if metric.has("query"):
        raise metric.error(
            "query", f"metric {name}: a web metric has no query (its web section says what to ask)"
        )
    if not metric.has("web"):
        raise metric.error("provider", f"metric {name}: provider: web needs a web section (url, jsonPath)")
    fields = metric.child("web")
    fields.reject_unknown(_WEB_KEYS)
    url, body = fields.string("url"), fields.string("body", "")
    for key, text in (("url", url), ("body", body)):
        wrong = check_arguments(text)
        if wrong:
            raise fields.error(key, f"metric {name}: {wrong}")
    _checked_url(fields, sample(url))
    method = fields.string("method", "POST" if body else "GET").upper()
    if method not in ("GET", "POST") or (body and method != "POST"):
        raise fields.error("method", f"must be GET or POST (POST to send a body), not {method!r}")
    try:
        path = parse_path(fields.string("jsonPath"))
    except ValueError as err:
        raise fields.error("jsonPath", str(err)) from None
    timeout = _seconds(fields, "timeout", WEB_TIMEOUT)
    if timeout <= 0:
        raise fields.error("timeout", "must be more than 0s")
    ca, token = _file(fields, "caFile", folder), _file(fields, "tokenFile", folder)
    return WebSource(url, path, timeout, method, body, ca, token, _allow_hosts(fields))


def _first_rollout(fields: Fields) -> FirstRollout:
    raw = fields.string("firstRollout", str(MetricSpec.first_rollout))
    if raw not in {str(f) for f in FirstRollout}:
        raise fields.error("firstRollout", f"must be one of {', '.join(FirstRollout)}, not {raw!r}")
    return FirstRollout(raw)


def _file(fields: Fields, key: str, base: Path | None) -> str:
    """The file ``key`` names, relative to the policy's folder, checked now (a regular file within
    the agent's limits); empty when not given."""
    if not fields.has(key):
        return ""
    path = Path(fields.string(key))
    return str(fields.check_file(key, base / path if base is not None else path))


def _source(fields: Fields, base: Path | None, more: frozenset[str] = frozenset()) -> PrometheusSource:
    fields.reject_unknown({"url", "caFile", "tokenFile", "allowHosts", *more})
    url = fields.string("url")
    _checked_url(fields, url)
    ca, token = _file(fields, "caFile", base), _file(fields, "tokenFile", base)
    return PrometheusSource(url.rstrip("/"), ca, token, _allow_hosts(fields))


def _checked_url(fields: Fields, url: str) -> None:
    """``url`` (under ``url``) is an http(s) URL whose literal address, if any, is not refused."""
    if not re.match(r"^https?://[^\s/]+", url):
        raise fields.error("url", f"{url!r} must be an http:// or https:// URL")
    address = written_address(urlsplit(url).hostname or "")
    if address is not None and refused_kind(address):
        raise fields.error(
            "url", f"must not point at {address}: a link-local, unspecified or multicast address"
        )


def _allow_hosts(fields: Fields) -> tuple[str, ...]:
    allow = tuple(sorted({name.strip().lower() for name in fields.strings("allowHosts", ())}))
    if any(not name or written_address(name) is not None for name in allow):
        raise fields.error("allowHosts", "lists host names (an address is refused whatever the list says)")
    return allow


def parse_prometheus(top: Fields, base: Path | None) -> AnalysisPolicy:
    """The policy's Prometheus (``prometheus: {url, caFile, tokenFile, clusters: {name: {...}}}``,
    ``clusters`` naming those that have their own; files relative to ``base``, the policy's folder)
    as an analysis without metrics."""
    if not top.has("prometheus"):
        return AnalysisPolicy(folder=str(base or ""))
    section = top.child("prometheus")
    clusters = section.child("clusters")
    names = sorted(str(name) for name in (section.raw("clusters") or {}))
    by_cluster = tuple((name, _source(clusters.child(name), base)) for name in names)
    if not section.has("url"):
        section.reject_unknown({"clusters"})
        return AnalysisPolicy(by_cluster=by_cluster, folder=str(base or ""))
    prometheus = _source(section, base, frozenset({"clusters"}))
    return AnalysisPolicy(prometheus=prometheus, by_cluster=by_cluster, folder=str(base or ""))


def _used(use: Use, folder: Path | None) -> list[MetricSpec]:
    found = []
    for metric in use.metrics():
        try:
            found.append(_metric(metric, folder))
        except ConfigError as err:
            raise use.told(err) from None
    return found


def parse_analysis(
    fields: Fields, base: AnalysisPolicy, templates: Mapping[str, Template] | None = None
) -> AnalysisPolicy:
    """The ``analysis`` mapping in ``fields`` (metrics, and the ``templates`` it uses with their
    arguments, filled from ``templates``; the Prometheus comes from ``base``, the policy's); ``base``
    when there is none. ``analysis: {metrics: []}`` turns analysis off."""
    fields.reject_unknown({"metrics", "templates"})
    if not fields.has("metrics") and not fields.has("templates"):
        return base
    folder = Path(base.folder) if base.folder else None
    metrics = tuple(_metric(fields.child("metrics", i), folder) for i in range(len(fields.items("metrics"))))
    metrics += tuple(m for use in parse_uses(fields, templates or {}) for m in _used(use, folder))
    if len({m.name for m in metrics}) != len(metrics):
        twice = sorted(name for name, n in Counter(m.name for m in metrics).items() if n > 1)
        raise fields.error(
            "metrics" if fields.has("metrics") else "templates",
            f"metric names must be unique, also those the templates bring: {', '.join(twice)}",
        )
    if any(m.web is None for m in metrics) and base.prometheus is None:
        raise fields.error("metrics", "no Prometheus to query: give prometheus.url at the top of the policy")
    return AnalysisPolicy(metrics, base.prometheus, base.by_cluster, base.folder)
