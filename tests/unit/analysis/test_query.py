"""Query templates: arguments filled and escaped, problems found before anything is parsed or run."""

from __future__ import annotations

from syncer.analysis import QueryArgs, check_query, render_query
from syncer.analysis.query import MAX_QUERY_CHARS, uses_objects


def test_arguments_are_filled_and_escaped_for_a_promql_string() -> None:
    args = QueryArgs('we"ird\\', "r1", "canary", "cache", "sessions")
    template = 'x{cluster="${cluster}",ns="${namespace}",name="${name}",rev="${revision}",wave="${wave}"}'
    assert render_query(template, args) == (
        'x{cluster="we\\"ird\\\\",ns="cache",name="sessions",rev="r1",wave="canary"}'
    )
    assert check_query(template) == ""
    assert uses_objects(template)
    assert not uses_objects('x{cluster="${cluster}"}')


def test_a_stray_dollar_is_refused() -> None:
    said = "a '$' that does not start an argument ${...} (write $$ for a literal '$')"
    assert check_query('x{a="$"}') == said
    assert check_query('x{a="$$"}') == ""


def test_a_query_too_long_to_parse_safely_is_refused_before_parsing() -> None:
    deep = "-" * 20000 + "x"  # deep enough to overflow the parser's stack, were it parsed
    assert check_query(deep) == f"longer than {MAX_QUERY_CHARS} characters (20001)"
    nested = "(" * 2000 + "x" + ")" * 2000
    assert check_query(nested) == ""
