"""Spans recorded in memory for unit tests: tracing turned on (an endpoint set with
``monkeypatch``, never exported to) and the process's tracing backend given a tracer provider whose
only processor keeps each ended span in an ``InMemorySpanExporter``; both are restored after."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from syncer.tracing import otel


def recorded_spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """Tracing on for this test, every span ended kept in the exporter returned."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nothing is sent there
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    backend = object.__new__(otel.Backend)  # its own provider, without the OTLP exporter
    backend.provider = provider
    backend.tracer = provider.get_tracer("syncer-test")
    monkeypatch.setattr(otel, "_backend", backend)
    return exporter
