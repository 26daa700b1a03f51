"""Guard rails: named CEL rules on each planned change and limits on a whole revision. [pure]

Owns: the CEL environment rules are written in (variables ``old``, ``new``, ``cluster``,
``revision``, ``change``; the Kubernetes semver and quantity functions), compiling an expression
with every problem's line and column (``compile_expression``), and judging a revision's planned
changes against a policy (``judge_revision``), verdict by verdict. Must not: do I/O, read policy
files (``syncer.config`` loads them) or act on a verdict (the engine rejects the revision).

Names are imported from their modules when first used, so that reading a verdict
(``syncer.guards.verdicts``) does not load the CEL environment.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syncer.guards.judge import change_inputs, judge_revision, referenced_paths
    from syncer.guards.language import VARIABLES, CelProblem, Evaluation, Program, compile_expression
    from syncer.guards.model import (
        DEFAULT_ACTIONS,
        ChangeKind,
        ChangeRule,
        GuardPolicy,
        PlannedChange,
        RevisionLimit,
    )
    from syncer.guards.verdicts import GuardOutcome, GuardReport, LimitVerdict, RuleVerdict

_HOME = {
    "change_inputs": "syncer.guards.judge",
    "judge_revision": "syncer.guards.judge",
    "referenced_paths": "syncer.guards.judge",
    "VARIABLES": "syncer.guards.language",
    "CelProblem": "syncer.guards.language",
    "Evaluation": "syncer.guards.language",
    "Program": "syncer.guards.language",
    "compile_expression": "syncer.guards.language",
    "DEFAULT_ACTIONS": "syncer.guards.model",
    "ChangeKind": "syncer.guards.model",
    "ChangeRule": "syncer.guards.model",
    "GuardPolicy": "syncer.guards.model",
    "PlannedChange": "syncer.guards.model",
    "RevisionLimit": "syncer.guards.model",
    "GuardOutcome": "syncer.guards.verdicts",
    "GuardReport": "syncer.guards.verdicts",
    "LimitVerdict": "syncer.guards.verdicts",
    "RuleVerdict": "syncer.guards.verdicts",
}

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


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
