"""The chart's ValidatingAdmissionPolicy rules, generated from the list of refusals. Pure.

``policy_block`` is the YAML of the policy's ``matchConditions``, ``variables`` and ``validations``
(under its ``spec``); ``with_policy_block`` puts it between the markers of the chart's template.
``python -m syncer.controller.refusal_policy`` rewrites the template; a unit test fails while the
template and the list differ.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from syncer.controller.refusals import CEL_VARIABLES, REFUSALS, SPEC_CHANGED

BEGIN = (
    "  # BEGIN generated from syncer/controller/refusals.py (python -m syncer.controller.refusal_policy)\n"
)
END = "  # END generated\n"
TEMPLATE = Path(__file__).resolve().parents[2] / "chart" / "templates" / "admission-policy.yaml"


def policy_spec() -> dict[str, Any]:
    """The policy's matchConditions, variables and validations, one validation per refusal."""
    return {
        # An update that leaves the spec alone (labels, annotations, the controller's finalizer) is
        # not judged: the controller's verdict on the spec does not change with it.
        "matchConditions": [{"name": "spec-changed", "expression": SPEC_CHANGED}],
        "variables": [{"name": name, "expression": expression} for name, expression in CEL_VARIABLES],
        "validations": [
            {
                "expression": refusal.expression,
                "messageExpression": refusal.message_expression,
                "reason": "Invalid",
            }
            for refusal in REFUSALS
        ],
    }


class _Dumper(yaml.SafeDumper):
    """Writes a long or quoted CEL expression as a literal block, as it reads in CEL."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if len(text) > 60 or "'" in text or '"' in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _string)


def policy_block() -> str:
    body = yaml.dump(policy_spec(), Dumper=_Dumper, sort_keys=False, width=1000, default_flow_style=False)
    return "".join(f"  {line}\n" for line in body.splitlines())


def with_policy_block(template: str) -> str:
    """``template`` with the generated block between its markers replaced by ``policy_block()``."""
    start, end = template.index(BEGIN) + len(BEGIN), template.index(END)
    return template[:start] + policy_block() + template[end:]


def main() -> int:
    text = TEMPLATE.read_text()
    updated = with_policy_block(text)
    if updated != text:
        TEMPLATE.write_text(updated)
        print(f"rewrote {TEMPLATE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
