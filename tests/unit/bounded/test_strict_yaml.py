from __future__ import annotations

import pytest

from syncer.bounded.files import decode
from syncer.bounded.limits import YamlLimits
from syncer.bounded.problems import ReadProblem
from syncer.bounded.strict_yaml import load_yaml

OPTIONS = YamlLimits()


def test_documents_keep_the_position_of_every_node() -> None:
    text = "a: 1\nb:\n  - x\n  - {c: d}\n---\nsecond: true\n"

    loaded = load_yaml(text, "f.yaml", OPTIONS)

    assert loaded.problems == ()
    first, second = loaded.documents
    assert first.data == {"a": 1, "b": ["x", {"c": "d"}]}
    assert str(first.location(("b", 1, "c"))) == "f.yaml:4:6"
    assert str(first.location(("b", 0))) == "f.yaml:3:5"
    assert str(second.location(("second",))) == "f.yaml:6:1"
    assert second.index == 1


def test_location_falls_back_to_the_nearest_known_ancestor() -> None:
    document = load_yaml("spec:\n  shards: 3\n", "f.yaml", OPTIONS).documents[0]

    assert str(document.location(("spec", "nothing", 4))) == "f.yaml:1:1"


def test_merge_keys_and_anchors_within_limits_are_expanded() -> None:
    text = "base: &base {shards: 3, version: '7.2'}\nspec:\n  <<: *base\n  shards: 6\n"

    loaded = load_yaml(text, "f.yaml", OPTIONS)

    assert loaded.problems == ()
    assert loaded.documents[0].data["spec"] == {"shards": 6, "version": "7.2"}


def test_timestamps_stay_strings() -> None:
    loaded = load_yaml("date: 2024-05-01\nwhen: 2024-05-01T10:00:00Z\n", "f.yaml", OPTIONS)

    assert loaded.documents[0].data == {"date": "2024-05-01", "when": "2024-05-01T10:00:00Z"}


def test_every_duplicate_key_of_a_file_is_reported() -> None:
    text = "a: 1\na: 2\nb:\n  c: 1\n  c: 2\n"

    loaded = load_yaml(text, "f.yaml", OPTIONS)

    assert [(p.kind, str(p.location)) for p in loaded.problems] == [
        (ReadProblem.YAML_DUPLICATE_KEY, "f.yaml:2:1"),
        (ReadProblem.YAML_DUPLICATE_KEY, "f.yaml:5:3"),
    ]


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_non_finite_numbers_are_rejected(value: str) -> None:
    loaded = load_yaml(f"x: {value}\n", "f.yaml", OPTIONS)

    assert [p.kind for p in loaded.problems] == [ReadProblem.YAML_VALUE]


@pytest.mark.parametrize(
    "tag", ["!!set {a: null}", "!!omap [a: 1]", "!custom x", "!!python/name:os.system ''"]
)
def test_tags_beyond_json_values_are_rejected(tag: str) -> None:
    loaded = load_yaml(f"x: {tag}\n", "f.yaml", OPTIONS)

    assert [(p.kind, p.location.line) for p in loaded.problems] == [(ReadProblem.YAML_TAG, 1)]
    assert loaded.documents == ()


def test_documents_before_a_syntax_error_are_kept() -> None:
    loaded = load_yaml("a: 1\n---\nb: [\n", "f.yaml", OPTIONS)

    assert [d.data for d in loaded.documents] == [{"a": 1}]
    assert [p.kind for p in loaded.problems] == [ReadProblem.YAML_SYNTAX]


def test_the_alias_bound_counts_every_alias_of_the_file() -> None:
    text = "a: &a 1\nb: [*a, *a]\n---\nc: &c 2\nd: [*c, *c]\n"

    assert load_yaml(text, "f.yaml", YamlLimits(max_aliases=4)).problems == ()
    loaded = load_yaml(text, "f.yaml", YamlLimits(max_aliases=3))
    assert [(p.kind, str(p.location)) for p in loaded.problems] == [
        (ReadProblem.YAML_ALIAS_LIMIT, "f.yaml:5:9")
    ]


def test_the_expansion_bound_applies_to_aliased_content() -> None:
    text = "a: &a [1, 2, 3, 4]\nb: [*a, *a, *a]\n"

    assert load_yaml(text, "f.yaml", YamlLimits(max_nodes=30)).problems == ()
    loaded = load_yaml(text, "f.yaml", YamlLimits(max_nodes=20))
    assert [(p.kind, str(p.location)) for p in loaded.problems] == [
        (ReadProblem.YAML_EXPANSION_LIMIT, "f.yaml:1:1")
    ]


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    text = decode(b"\xef\xbb\xbfa: 1\n", "f.yaml")

    assert isinstance(text, str)
    assert load_yaml(text, "f.yaml", OPTIONS).documents[0].data == {"a": 1}


def test_undecodable_bytes_are_located() -> None:
    found = decode(b"a: 1\nb: \xc3\x28\n", "f.yaml")

    assert not isinstance(found, str)
    assert (found.kind, str(found.location)) == (ReadProblem.ENCODING, "f.yaml:2:4")


def test_a_control_character_after_non_ascii_text_is_located_by_character() -> None:
    """libyaml reports the byte offset; the location must count characters, as editors do."""
    loaded = load_yaml("é: ü\n  x: \x01\n", "f.yaml", OPTIONS)

    assert [(p.kind, str(p.location)) for p in loaded.problems] == [(ReadProblem.ENCODING, "f.yaml:2:6")]
    assert "U+0001" in loaded.problems[0].message


def test_a_lone_surrogate_is_a_problem_not_a_crash() -> None:
    loaded = load_yaml("a: \ud800\n", "f.yaml", OPTIONS)

    assert [(p.kind, str(p.location)) for p in loaded.problems] == [(ReadProblem.ENCODING, "f.yaml:1:4")]


def test_positions_count_characters_after_non_ascii_keys() -> None:
    document = load_yaml("π: é\nb: [x, ü, {c: d}]\n", "f.yaml", OPTIONS).documents[0]

    assert str(document.location(("b", 2, "c"))) == "f.yaml:2:12"


def test_the_pure_python_parser_gives_the_events_libyaml_gives() -> None:
    """The fallback for a PyYAML built without libyaml reads the same events, at the same places."""
    from yaml._yaml import CParser

    from syncer.bounded.strict_yaml import _PythonParser

    text = "a: 1\nb: [x, 'ü', {c: d}]\n---\n- &x 1\n- *x\n"
    python, c = _PythonParser(text), CParser(text)
    seen = []
    while (event := python.get_event()) is not None:
        other = c.get_event()
        seen.append(type(event).__name__)
        assert type(other) is type(event)
        assert (event.start_mark.line, event.start_mark.column) == (
            other.start_mark.line,
            other.start_mark.column,
        )
        assert getattr(event, "value", None) == getattr(other, "value", None)
    assert c.get_event() is None
    assert "AliasEvent" in seen


def test_a_scalar_tag_on_a_mapping_is_a_problem() -> None:
    loaded = load_yaml("a: !!float {b: 1}\n", "f.yaml", OPTIONS)

    assert [str(p.location) for p in loaded.problems] == ["f.yaml:1:4"]
    assert "expected a scalar node" in loaded.problems[0].message


@pytest.mark.parametrize("text", ["[" * 200_000, "a: " + "{b: " * 100_000, "- " * 50_000 + "x"])
def test_hostile_nesting_is_one_located_problem(text: str) -> None:
    """libyaml stops flow nesting at its own bound (1000), the composer at the depth limit."""
    loaded = load_yaml(text, "f.yaml", OPTIONS)

    assert loaded.documents == ()
    (found,) = loaded.problems
    assert found.kind in (ReadProblem.YAML_DEPTH_LIMIT, ReadProblem.YAML_SYNTAX)
    assert "nest" in found.message
    assert found.location.line == 1


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("1" * 5000, "11111111111111111111... (5000 characters)"),
        ("-" + "9" * 5000, "-9999999999999999999... (5001 characters)"),
        ("0x" + "f" * 5000, "0xffffffffffffffffff... (5002 characters)"),
        ("9223372036854775808", "'9223372036854775808'"),
        ("1_000_000_000_000_000_000_000", "'1000000000000000000000'"),
        ("0b1" + "0" * 64, "0b100000000000000000... (67 characters)"),
    ],
)
def test_an_integer_beyond_64_bits_is_a_located_problem_not_an_exception(value: str, shown: str) -> None:
    loaded = load_yaml(f"spec:\n  shards: {value}\n", "f.yaml", OPTIONS)

    assert [(p.kind, str(p.location)) for p in loaded.problems] == [(ReadProblem.YAML_VALUE, "f.yaml:2:11")]
    assert f"integer {shown} is outside the 64-bit range" in loaded.problems[0].message


@pytest.mark.parametrize(
    ("value", "number"),
    [("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63)), ("0x7f", 127), ("1_000", 1000)],
)
def test_integers_within_64_bits_are_read(value: str, number: int) -> None:
    loaded = load_yaml(f"n: {value}\n", "f.yaml", OPTIONS)

    assert loaded.problems == ()
    assert loaded.documents[0].data == {"n": number}
