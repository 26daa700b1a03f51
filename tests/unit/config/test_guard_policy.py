"""Loading the guard policy: every CEL problem is found at load with file:line:column."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.config.guards import load_guard_policy
from syncer.errors import ConfigError
from syncer.guards import ChangeKind

EXPECTING = (
    "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT,"
    " STRING, BYTES, IDENTIFIER}"
)


def load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "guards.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_guard_policy(path)
    return str(caught.value).replace(str(path), "guards.yaml")


def test_syntax_error_in_a_literal_block_names_its_line_and_column(tmp_path: Path) -> None:
    text = """rules:
  - name: multi
    expression: |
      new.spec.shards <= 1 &&
        old.spec.version ==
"""
    assert load_error(tmp_path, text) == (
        f"guards.yaml:5:28: rule multi: Syntax error: mismatched input '<EOF>' {EXPECTING}"
    )


def test_undeclared_variable(tmp_path: Path) -> None:
    text = "rules:\n  - name: typo\n    expression: nwe.spec.shards <= 1\n"
    assert (
        load_error(tmp_path, text) == "guards.yaml:3:25: rule typo: undeclared reference to 'nwe.spec.shards'"
    )


def test_unknown_function_and_wrong_argument_type_are_both_reported(tmp_path: Path) -> None:
    text = (
        'rules:\n  - name: ok\n    expression: "true"\n'
        '  - name: calls\n    expression: "frobnicate(new) && semver(1)"\n'
    )
    assert load_error(tmp_path, text) == (
        "guards.yaml:5:28: rule calls: undeclared reference to 'frobnicate'\n"
        "guards.yaml:5:43: rule calls: found no matching overload for 'semver' applied to '(int)'"
    )


def test_an_expression_must_give_a_bool(tmp_path: Path) -> None:
    text = "rules:\n  - name: number\n    expression: \"new.spec.shards + 1 > 2 ? 'big' : 'small'\"\n"
    assert load_error(tmp_path, text) == (
        "guards.yaml:3:18: rule number: the expression gives a string; a rule must give a bool"
    )


def test_a_folded_expression_points_at_its_first_line(tmp_path: Path) -> None:
    text = "rules:\n  - name: folded\n    expression: >\n      new.spec.shards ==\n      )\n"
    assert load_error(tmp_path, text) == (
        f"guards.yaml:3: rule folded: Syntax error: mismatched input ')' {EXPECTING} (at line 1, column 20"
        " of the folded expression; a literal block, |, keeps lines)"
    )


def test_type_mismatch_between_known_types(tmp_path: Path) -> None:
    text = "rules:\n  - name: mixed\n    expression: \"quantity('1Gi').isLessThan('2Gi')\"\n"
    assert load_error(tmp_path, text) == (
        "guards.yaml:3:44: rule mixed: found no matching overload for 'isLessThan' applied to"
        " '(map(string, dyn), string)'"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules:\n  - expression: 'true'\n", "guards.yaml:2: rules[0].name: is required"),
        (
            "rules:\n  - name: Bad_Name\n    expression: 'true'\n",
            "guards.yaml:2: rules[0].name: 'Bad_Name' must be lower-case letters, digits, '-' and '.'",
        ),
        (
            "rules:\n  - name: empty\n",
            "guards.yaml:2: rules[0].expression: is required: a CEL expression that gives a bool",
        ),
        (
            "rules:\n  - name: a\n    expression: 'true'\n    when: always\n",
            "guards.yaml:2: rules[0]: unknown key(s) when (known: actions, clusters, description, expression,"
            " kinds, message, name)",
        ),
        (
            "rules:\n  - name: a\n    expression: 'true'\n    actions: [delete]\n",
            "guards.yaml:2: rules[0].actions: delete: must be among create, prune, update",
        ),
        (
            "rules:\n  - name: a\n    expression: 'true'\n    clusters: {matchLabels: {tier: 1}}\n",
            "guards.yaml:2: rules[0].clusters.matchLabels: must map label names to string values",
        ),
        (
            "rules:\n  - name: a\n    expression: 'true'\nlimits:\n  - name: a\n    maxObjectsChanged: 1\n",
            "guards.yaml: two rules or limits have the same name 'a'",
        ),
        ("limits:\n  - name: l\n", "guards.yaml:2: limits[0]: give maxObjectsChanged or maxClustersAffected"),
        (
            "limits:\n  - name: l\n    maxObjectsChanged: -1\n",
            "guards.yaml:2: limits[0].maxObjectsChanged: must be a whole number of at least 0, not -1",
        ),
        ("rules: [3]\n", "guards.yaml:1: rules[0]: must be a mapping, not int"),
        (
            "rules:\n  - name: a\n    expression: [x]\n",
            "guards.yaml:2: rules[0].expression: is required: a CEL expression that gives a bool",
        ),
        ("rules: {}\n", "guards.yaml: rules: must be a list, not dict"),
        ("rule: []\n", "guards.yaml: top level: unknown key(s) rule (known: limits, rules)"),
        ("rules: [\n", "guards.yaml:2:1: not valid YAML"),
    ],
)
def test_shape_errors_name_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    assert load_error(tmp_path, text).startswith(message)


def test_scopes_are_read(tmp_path: Path) -> None:
    path = tmp_path / "guards.yaml"
    path.write_text(
        "rules:\n  - name: prod\n    kinds: [RedisCluster]\n    actions: [prune]\n"
        "    clusters: {matchLabels: {tier: prod}}\n    expression: old != null\n    message: m\n"
        "limits:\n  - name: two\n    maxClustersAffected: 2\n    clusters: {matchLabels: {tier: prod}}\n"
    )
    policy = load_guard_policy(path)
    rule = policy.rules[0]
    assert (rule.kinds, rule.actions, rule.message) == ({"RedisCluster"}, {ChangeKind.PRUNE}, "m")
    assert rule.clusters is not None
    assert rule.clusters.matches({"tier": "prod"})
    assert (policy.limits[0].max_objects, policy.limits[0].max_clusters) == (None, 2)
    assert str(policy.limits[0].location) == f"{path}:9"


def test_an_empty_file_is_an_empty_policy(tmp_path: Path) -> None:
    path = tmp_path / "guards.yaml"
    path.write_text("# nothing yet\n")
    assert load_guard_policy(path).empty
