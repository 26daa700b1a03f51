"""Traces of syncer's work: OpenTelemetry spans exported over OTLP, when an endpoint is configured.

Owns: whether tracing is on (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
set; everything else is configured the standard way: ``OTEL_SERVICE_NAME``, default ``syncer``,
``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``), the spans syncer opens (``span``, ``traced``), carrying the
current span into worker threads (``carried``), the W3C ``traceparent`` that crosses the apiserver on
the objects syncer applies (``traceparent``; the annotation is
``syncer.domain.applied.TRACEPARENT_ANNOTATION``) and the ids a log line of a span carries (``log_ids``).

Off by default at no cost: while no endpoint is set, nothing of OpenTelemetry is imported (the
SDK lives in ``syncer.tracing.otel``, imported on the first span opened with an endpoint set), and
``span`` gives one shared do-nothing span. Must not: import anything of syncer above ``errors``.
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:
    from syncer.tracing.otel import Backend

__all__ = [
    "ENDPOINT_VARIABLES",
    "Span",
    "carried",
    "current",
    "each",
    "enabled",
    "flush",
    "log_ids",
    "since",
    "span",
    "traced",
    "traceparent",
]

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

Attributes = Mapping[str, str | int | float | bool]
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class Span:
    """A span being recorded; this base is the do-nothing one given while tracing is off."""

    def set(self, key: str, value: str | int | float | bool) -> None:
        """Set one attribute."""

    def fail(self, message: str) -> None:
        """Mark the span failed (status ERROR) with ``message``, such as the apiserver's answer."""

    def event(self, name: str, attributes: Attributes) -> None:
        """Add an event (a point in time with ``attributes``) to the span, such as a person's act read."""


_NOTHING = Span()


def enabled() -> bool:
    """Whether an OTLP endpoint is configured (read each time: a test may set it)."""
    return any(os.environ.get(name) for name in ENDPOINT_VARIABLES)


def _backend() -> Backend | None:
    if not enabled():
        return None
    from syncer.tracing import otel

    return otel.backend()


@contextmanager
def _nothing() -> Iterator[Span]:
    yield _NOTHING


def span(
    name: str, attributes: Attributes | None = None, parent: str = "", *, root: bool = False
) -> AbstractContextManager[Span]:
    """A span named ``name`` around a ``with`` block, child of the current span, or of the span whose
    W3C traceparent is ``parent`` (another process's, read from an object), or the root of a new
    trace (``root``, or no current span). An exception leaving the block is recorded on the span and
    sets its status to ERROR."""
    backend = _backend()
    if backend is None:
        return _nothing()
    return backend.span(name, attributes or {}, parent or ("root" if root else ""))


def since(name: str, start_ns: int, attributes: Attributes | None = None) -> None:
    """A span named ``name`` that began at ``start_ns`` (``time.time_ns()``) and ends now, child of
    the current span: a wait seen only when it is over, such as pods becoming Ready."""
    backend = _backend()
    if backend is not None:
        backend.since(name, start_ns, attributes or {})


def traced(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A decorator: each call of the function is a span named ``name``."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            if not enabled():
                return func(*args, **kwargs)
            with span(name):
                return func(*args, **kwargs)

        return call

    return decorate


def each(items: Iterable[T], name: str, attributes: Callable[[T], Attributes]) -> Iterator[T]:
    """``items``, each one yielded inside a span named ``name`` (its ``attributes``) that lasts until
    the next is asked for, or the loop is left: a loop's body as a span without indenting it."""
    for item in items:
        if not enabled():
            yield item
            continue
        with span(name, attributes(item)):
            yield item


def current() -> Span:
    """The span being recorded in this context (the do-nothing one while tracing is off), to add an
    attribute or a failure found further down than where the span was opened."""
    otel = sys.modules.get("syncer.tracing.otel")
    return _NOTHING if otel is None or not enabled() else otel.current_span()


def carried(func: Callable[P, R]) -> Callable[P, R]:
    """``func`` run in the context of the caller (its current span), from whatever thread calls it:
    a worker of a pool does not inherit the submitting thread's context by itself."""
    if not enabled():
        return func
    context = contextvars.copy_context()

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.copy().run(func, *args, **kwargs)

    return call


def traceparent() -> str:
    """The W3C traceparent of the current span; "" when tracing is off or no span is recording."""
    backend = _backend()
    return backend.traceparent() if backend is not None else ""


def flush() -> None:
    """Export the spans ended so far now (a short-lived command, a test); nothing while tracing is off."""
    otel = sys.modules.get("syncer.tracing.otel")
    if otel is not None:
        otel.backend().flush()


def log_ids() -> tuple[str, str] | None:
    """The trace id and span id (hex) of the current span, for a log line; None outside a span, or
    while tracing is off (then without importing anything)."""
    otel = sys.modules.get("syncer.tracing.otel")
    return None if otel is None else otel.current_ids()
