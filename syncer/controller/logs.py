"""JSON log lines for the controller and the agent: one object per record, with the fields passed in
``extra`` and, inside a span, its ``trace_id`` and ``span_id``. apscheduler's lines (the agent's
jobs) go through the same formatter, never as plain text into the JSON stream."""

from __future__ import annotations

import json
import logging
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

from syncer.tracing import log_ids

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", ...extra}``; extra fields such as ``reconcile_id`` kept."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = (
                    value if isinstance(value, str | int | float | bool) or value is None else str(value)
                )
        ids = log_ids()
        if ids is not None:
            entry["trace_id"], entry["span_id"] = ids
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, sort_keys=False)


LOG_FORMATS = ("json", "text")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure(level: int = logging.INFO, log_format: str = "json") -> None:
    """Send the ``syncer`` loggers (and apscheduler's) to stderr as JSON lines, or as plain text lines
    (``log_format`` "text")."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    for name in ("syncer", "apscheduler"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level if name == "syncer" else max(level, logging.WARNING))
        logger.propagate = False


class ContextLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger adapter whose context fields (such as ``reconcile_id``) merge with a call's ``extra``."""

    def process(
        self, msg: object, kwargs: MutableMapping[str, Any]
    ) -> tuple[object, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **(kwargs.get("extra") or {})}
        return msg, kwargs
