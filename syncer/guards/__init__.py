"""Guard rails: named CEL rules on each planned change and limits on a whole revision. [pure]

Owns: the CEL environment rules are written in (variables ``old``, ``new``, ``cluster``,
``revision``, ``change``; the Kubernetes semver and quantity functions), compiling an expression
with every problem's line and column (``compile_expression``), and judging a revision's planned
changes against a policy (``judge_revision``), verdict by verdict. Must not: do I/O, read policy
files (``syncer.config`` loads them) or act on a verdict (the engine rejects the revision).

Names are imported when first used (``syncer.lazy``): reading a verdict (``syncer.guards.verdicts``) does
not load the CEL environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncer.lazy import lazy_getattr

if TYPE_CHECKING:
    from syncer.guards.judge import change_inputs, judge_revision, referenced_paths
    from syncer.guards.language import VARIABLES, CelProblem, Evaluation, Program, compile_expression
    from syncer.guards.policy import (
        DEFAULT_ACTIONS,
        ChangeKind,
        ChangeRule,
        GuardPolicy,
        PlannedChange,
        RevisionLimit,
    )
    from syncer.guards.verdicts import GuardOutcome, GuardReport, LimitVerdict, RuleVerdict

__getattr__ = lazy_getattr(
    __name__,
    {
        "judge": ("change_inputs", "judge_revision", "referenced_paths"),
        "language": ("VARIABLES", "CelProblem", "Evaluation", "Program", "compile_expression"),
        "policy": (
            "DEFAULT_ACTIONS",
            "ChangeKind",
            "ChangeRule",
            "GuardPolicy",
            "PlannedChange",
            "RevisionLimit",
        ),
        "verdicts": ("GuardOutcome", "GuardReport", "LimitVerdict", "RuleVerdict"),
    },
)

__all__ = [
    "DEFAULT_ACTIONS",
    "VARIABLES",
    "CelProblem",
    "ChangeKind",
    "ChangeRule",
    "Evaluation",
    "GuardOutcome",
    "GuardPolicy",
    "GuardReport",
    "LimitVerdict",
    "PlannedChange",
    "Program",
    "RevisionLimit",
    "RuleVerdict",
    "change_inputs",
    "compile_expression",
    "judge_revision",
    "referenced_paths",
]
