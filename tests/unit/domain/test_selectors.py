from __future__ import annotations

import pytest

from syncer.domain.selectors import LabelSelector

LABELS = {"tier": "prod", "region": "eu-west"}


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ({}, True),
        ({"matchLabels": {"tier": "prod"}}, True),
        ({"matchLabels": {"tier": "prod", "region": "us-east"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["prod", "canary"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "region", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "region", "operator": "DoesNotExist"}]}, False),
        (
            {
                "matchLabels": {"region": "eu-west"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["canary"]}],
            },
            False,
        ),
    ],
)
def test_selectors_follow_kubernetes_semantics(selector: dict[str, object], selected: bool) -> None:
    assert LabelSelector.from_dict(selector).matches(LABELS) is selected
