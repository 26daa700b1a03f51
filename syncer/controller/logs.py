"""JSON log lines for the controller: one object per record, with the fields passed in ``extra``."""

from __future__ import annotations

import json
import logging
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

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
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, sort_keys=False)


def configure(level: int = logging.INFO) -> None:
    """Send the ``syncer`` loggers to stderr as JSON lines."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("syncer")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


class ContextLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger adapter whose context fields (such as ``reconcile_id``) merge with a call's ``extra``."""

    def process(
        self, msg: object, kwargs: MutableMapping[str, Any]
    ) -> tuple[object, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **(kwargs.get("extra") or {})}
        return msg, kwargs
