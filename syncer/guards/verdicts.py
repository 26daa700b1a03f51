"""What the guards said about a revision: one verdict per rule and change, one per limit."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class GuardOutcome(StrEnum):
    """``pass``: the rule holds; ``fail``: it does not; ``error``: it could not be evaluated (a missing
    field, a bad version string), which rejects the revision like a failure."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


@dataclass(frozen=True)
class RuleVerdict:
    """A rule judged on one change. ``inputs`` are the fields the expression reads, with their values
    (JSON), so a rejection shows why."""

    rule: str
    cluster: str
    subject: str
    outcome: GuardOutcome
    message: str = ""
    inputs: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        shown = ", ".join(f"{path}={value}" for path, value in self.inputs)
        return f"rule {self.rule} {self.outcome}ed on {self.cluster} {self.subject}: {self.message}" + (
            f" (inputs: {shown})" if shown else ""
        )


@dataclass(frozen=True)
class LimitVerdict:
    """A revision-wide limit judged on the whole revision."""

    limit: str
    outcome: GuardOutcome
    message: str

    def __str__(self) -> str:
        return f"limit {self.limit} {self.outcome}ed: {self.message}"


@dataclass(frozen=True)
class GuardReport:
    """Every verdict on a revision; it is rejected when any rule or limit did not pass."""

    revision: str
    rules: tuple[RuleVerdict, ...] = ()
    limits: tuple[LimitVerdict, ...] = ()

    @property
    def failures(self) -> tuple[RuleVerdict | LimitVerdict, ...]:
        limits = tuple(v for v in self.limits if v.outcome is not GuardOutcome.PASS)
        return limits + tuple(v for v in self.rules if v.outcome is not GuardOutcome.PASS)

    @property
    def rejected(self) -> bool:
        return bool(self.failures)

    def for_change(self, cluster: str, subject: str) -> tuple[RuleVerdict, ...]:
        return tuple(v for v in self.rules if v.cluster == cluster and v.subject == subject)

    def summary(self) -> str:
        """One line per failure, limits first; empty when the revision passed."""
        return "\n".join(str(v) for v in self.failures)
