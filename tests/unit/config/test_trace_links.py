"""``tracing.urlTemplate`` of the agent config: checked at load (http(s) with a host, holding
``{traceId}``, no other placeholder, no credentials), and the link it makes of a trace id."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from syncer.config import load_agent_config
from syncer.config.trace_links import TraceLinks
from syncer.errors import ConfigError

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _load(tmp_path: Path, tracing: object) -> TraceLinks:
    (tmp_path / "trust.yaml").write_text("mode: strict\n")
    config: dict[str, object] = {"source": {"url": "https://h/f.git"}, "trustPolicy": "trust.yaml"}
    if tracing is not None:
        config["tracing"] = tracing
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    return load_agent_config(tmp_path / "agent.yaml").tracing


def test_no_template_makes_no_link(tmp_path: Path) -> None:
    links = _load(tmp_path, None)
    assert links == TraceLinks()
    assert links.url(TRACE) == ""


def test_the_template_turns_a_trace_id_into_its_link(tmp_path: Path) -> None:
    links = _load(tmp_path, {"urlTemplate": "https://jaeger.example:16686/trace/{traceId}?uiFind=1"})
    assert links.url(TRACE) == f"https://jaeger.example:16686/trace/{TRACE}?uiFind=1"
    assert links.url("") == ""  # an apply that was not traced has no link
    # Only a W3C trace id is put into the URL, never other text.
    assert links.url("../admin") == ""
    assert links.url(TRACE.upper()) == ""


@pytest.mark.parametrize(
    ("tracing", "problem"),
    [
        ({"urlTemplate": "https://jaeger.example/trace/"}, "tracing.urlTemplate: must hold {traceId}"),
        ({"urlTemplate": "javascript:alert({traceId})"}, "must be an http(s):// URL with a host"),
        ({"urlTemplate": "file:///trace/{traceId}"}, "must be an http(s):// URL with a host"),
        ({"urlTemplate": "https:///trace/{traceId}"}, "must be an http(s):// URL with a host"),
        ({"urlTemplate": "https://j/{service}/{traceId}"}, "must hold no placeholder but {traceId}"),
        ({"urlTemplate": "https://u:p@j/trace/{traceId}"}, "must hold no credentials"),
        ({"urlTemplate": "https://j/trace/{traceId} x"}, "must hold no space or control character"),
        ({"urlTemplate": "https://j:port/trace/{traceId}"}, "is not a URL"),
        ({"urlTemplate": 3}, "tracing.urlTemplate: must be a non-empty string"),
        ({"url": "https://j/{traceId}"}, "tracing: unknown key(s) url"),
        ("https://j/{traceId}", "tracing: must be a mapping"),
    ],
)
def test_a_bad_template_is_refused_at_load_with_where_and_why(
    tmp_path: Path, tracing: object, problem: str
) -> None:
    with pytest.raises(ConfigError, match=r"agent\.yaml:") as raised:
        _load(tmp_path, tracing)
    assert problem in str(raised.value)
