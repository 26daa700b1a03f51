"""Asking a Prometheus: instant queries over its HTTP API (``/api/v1/query``), with its CA bundle and
bearer token; and a web metric's endpoint (``web``: a GET or POST answered with JSON).

Owns the HTTP requests to Prometheus and to web metrics' endpoints and their failures, each turned
into an answer (an error, never an exception and never a value). Must not judge an answer or decide
anything about a rollout: that is ``syncer.analysis`` and the engine.
"""

from __future__ import annotations

from syncer.prom.client import PrometheusClient

__all__ = ["PrometheusClient"]
