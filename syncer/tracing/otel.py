"""The OpenTelemetry SDK behind ``syncer.tracing``: imported only once an OTLP endpoint is configured.

One tracer provider per process, made on first use: its resource from the standard environment
(``OTEL_SERVICE_NAME``, else ``syncer``; ``OTEL_RESOURCE_ATTRIBUTES``), its sampler from
``OTEL_TRACES_SAMPLER``, spans batched to the OTLP/HTTP exporter (``OTEL_EXPORTER_OTLP_*``) and
flushed when the process exits.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from syncer.tracing import Span

DEFAULT_SERVICE_NAME = "syncer"
_PROPAGATOR = TraceContextTextMapPropagator()


class _Recording(Span):
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set(self, key: str, value: str | int | float | bool) -> None:
        self._span.set_attribute(key, value)

    def fail(self, message: str) -> None:
        self._span.set_status(Status(StatusCode.ERROR, message))

    def event(self, name: str, attributes: Mapping[str, str | int | float | bool]) -> None:
        self._span.add_event(name, dict(attributes))


class Backend:
    """The process's tracer, and the spans and traceparents it makes."""

    def __init__(self) -> None:
        attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: DEFAULT_SERVICE_NAME}
        provider = TracerProvider(resource=Resource.create(attributes))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self.provider = provider
        self.tracer = provider.get_tracer("syncer")

    def span(
        self, name: str, attributes: Mapping[str, str | int | float | bool], parent: str
    ) -> AbstractContextManager[Span]:
        return self._span(name, attributes, parent)

    @contextmanager
    def _span(
        self, name: str, attributes: Mapping[str, str | int | float | bool], parent: str
    ) -> Iterator[Span]:
        # "root": a new trace whatever this thread's context holds.
        context = (
            otel_context.Context()
            if parent == "root"
            else _PROPAGATOR.extract({"traceparent": parent})
            if parent
            else None
        )
        with self.tracer.start_as_current_span(name, context, attributes=dict(attributes)) as span:
            yield _Recording(span)

    def since(self, name: str, start_ns: int, attributes: Mapping[str, str | int | float | bool]) -> None:
        self.tracer.start_span(name, start_time=start_ns, attributes=dict(attributes)).end()

    def traceparent(self) -> str:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier.get("traceparent", "")

    def flush(self, timeout_ms: int = 5000) -> bool:
        return self.provider.force_flush(timeout_ms)


_lock = threading.Lock()
_backend: Backend | None = None


def backend() -> Backend:
    """The process's backend, made on first use."""
    global _backend  # noqa: PLW0603 (one tracer provider per process)
    if _backend is None:
        with _lock:
            if _backend is None:
                _backend = Backend()
    return _backend


def current_span() -> Span:
    """The current span, to set an attribute or a failure on."""
    return _Recording(trace.get_current_span(otel_context.get_current()))


def current_ids() -> tuple[str, str] | None:
    """The current span's trace id and span id as hex, None outside a recording span."""
    context = trace.get_current_span(otel_context.get_current()).get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")
