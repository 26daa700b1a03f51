"""How ``syncer diff`` shows a plan: text for people, a unified diff for review tools.

Order everywhere: waves in rollout order; within a wave the clusters in the order the wave lists
them (``syncer.rollout.plan_waves``: by name); within a cluster the objects by API group, kind,
namespace and name. Secret values arrive masked from the plan.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncer.cli.tables import Column, fit_table
from syncer.domain.applied import FIELD_MANAGER
from syncer.domain.plans import OBJECT_ACTIONS, Action, Change, ClusterPlan, FieldChange, FleetPlan
from syncer.guards import GuardOutcome, GuardReport, RuleVerdict

_STYLE = {
    Action.CREATE: ("+", "green"),
    Action.UPDATE: ("~", "yellow"),
    Action.ADOPT: ("^", "cyan"),
    Action.PRUNE: ("-", "red"),
    Action.KEEP: ("=", "dim"),
    Action.UNCHANGED: ("=", "dim"),
    Action.CONFLICT: ("!", "bold red"),
    Action.DRIFT: ("≠", "magenta"),
    Action.ERROR: ("x", "bold red"),
}
_SHOWN = frozenset(set(OBJECT_ACTIONS) - {Action.UNCHANGED})


def field_name(pointer: str) -> str:
    """``/metadata/labels/app.kubernetes.io~1name`` as ``metadata.labels["app.kubernetes.io/name"]``."""
    out = ""
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if part.isidentifier() or part.isdigit():
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(object)"


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _yaml(body: Mapping[str, Any] | None) -> list[str]:
    if body is None:
        return []
    return yaml.safe_dump(dict(body), sort_keys=False, allow_unicode=True).splitlines()


def _field_line(change: FieldChange, field_manager: str) -> Text:
    line = Text("      ")
    name = field_name(change.path)
    if change.action in (Action.ADOPT, Action.RELEASE):
        verb = "syncer takes" if change.action is Action.ADOPT else "syncer releases"
        line.append(f"^ {name}: {_value(change.after)}  ({verb} it)", style="cyan")
    elif change.before is None:
        line.append(f"+ {name}: {_value(change.after)}", style="green")
    elif change.after is None:
        line.append(f"- {name}: {_value(change.before)}", style="red")
    else:
        line.append(f"~ {name}: ", style="yellow")
        line.append(_value(change.before), style="red")
        line.append(" -> ")
        line.append(_value(change.after), style="green")
    if change.action in (Action.CONFLICT, Action.DRIFT):
        line.append(f"  [{change.action}]", style=_STYLE[change.action][1])
    if change.owners:
        others = [o for o in change.owners if o != field_manager]
        line.append(f"  (owner: {', '.join(change.owners)})", style="bold" if others else "dim")
    return line


def _verdict_line(verdict: RuleVerdict) -> Text:
    if verdict.outcome is GuardOutcome.PASS:
        return Text(f"      ✓ guard {verdict.rule}", style="dim green")
    shown = ", ".join(f"{path}={value}" for path, value in verdict.inputs)
    line = Text(f"      ✗ guard {verdict.rule} {verdict.outcome}: {verdict.message}", style="bold red")
    if shown:
        line.append(f"  ({shown})", style="red")
    return line


def _object_lines(change: Change, field_manager: str, guards: GuardReport | None = None) -> list[Text]:
    mark, style = _STYLE[change.action]
    head = Text(f"    {mark} ")
    head.append(f"{change.action:<9} ", style=style)
    head.append(change.key.subject, style="bold")
    if change.message:
        head.append(f"  {change.message}", style="dim")
    verdicts = guards.for_change(change.key.cluster, change.key.subject) if guards is not None else ()
    checks = [_verdict_line(v) for v in verdicts]
    if change.action is Action.CREATE:
        return [head, *checks, *(Text(f"        {line}", style="green") for line in _yaml(change.after))]
    return [head, *checks, *(_field_line(f, field_manager) for f in change.fields)]


def stop_line(plan: ClusterPlan) -> str:
    """Why the sync writes nothing to the cluster now: held until a hold ends, or blocked."""
    if plan.pinned_to:
        to = plan.pinned_to[:12]
        what = f"the sync puts it on {to}, not this revision; below is what that takes"
        return f"HELD (pinned): {what}: {plan.blocked}"
    if plan.hold:
        return f"HELD ({plan.hold}), nothing below is applied until it ends: {plan.blocked}"
    return f"BLOCKED, nothing below is applied: {plan.blocked}"


def _cluster_lines(plan: ClusterPlan, field_manager: str, guards: GuardReport | None = None) -> list[Text]:
    lines = [Text(f"  cluster {plan.cluster}", style="bold cyan")]
    if plan.error:
        lines.append(Text(f"    error: {plan.error}", style="bold red"))
        return lines
    if plan.blocked:
        lines.append(Text(f"    {stop_line(plan)}", style="bold yellow" if plan.hold else "bold red"))
    shown = [c for c in plan.changes if c.action in _SHOWN]
    for change in shown:
        lines.extend(_object_lines(change, field_manager, guards))
    if not shown:
        lines.append(Text(f"    no changes ({plan.count(Action.UNCHANGED)} objects unchanged)", style="dim"))
    return lines


def _summary(plan: FleetPlan, width: int) -> Table:
    """Objects per action and cluster; only the actions that occur (and ``unchanged``) get a column,
    fitted to ``width``: the counts of actions that change something stay, ``unchanged`` and the
    wave go first when the terminal is narrow."""
    totals = {a: sum(c.counts()[a] for c in plan.clusters) for a in OBJECT_ACTIONS}
    shown = [a for a in OBJECT_ACTIONS if totals[a] or a is Action.UNCHANGED]
    columns = [Column("wave", priority=2), Column("cluster", priority=0)] + [
        Column(str(a), priority=3 if a is Action.UNCHANGED else 0, justify="right") for a in shown
    ]
    rows: list[list[str]] = []
    for wave in plan.waves:
        for cluster in wave.clusters:
            counts = cluster.counts()
            cells = ["-"] * len(shown) if cluster.error else [str(counts[a]) for a in shown]
            mark = (
                " (error)"
                if cluster.error
                else f" (held: {cluster.hold})"
                if cluster.hold
                else " (blocked)"
                if cluster.blocked
                else ""
            )
            rows.append([wave.name, cluster.cluster + mark, *cells])
    return fit_table(columns, rows, width, title="summary", box=box.SIMPLE_HEAD, pad_edge=False).table


def guard_summary(guards: GuardReport | None, policy: str) -> list[str]:
    """The revision's guard verdict in a few lines: the limits, and what the agent would do."""
    if not policy:
        return []
    if guards is None:
        return [f"guards ({policy}): not judged offline; they need the live objects"]
    lines = [f"limit {v.limit}: {v.outcome}: {v.message}" for v in guards.limits]
    failed = [v for v in guards.rules if v.outcome is not GuardOutcome.PASS]
    if guards.rejected:
        lines.append(
            f"guards ({policy}): REJECTED: {len(failed)} rule verdict(s) and "
            f"{sum(v.outcome is not GuardOutcome.PASS for v in guards.limits)} limit(s) failed; "
            "the agent would reject this revision whole and change nothing"
        )
    else:
        lines.append(
            f"guards ({policy}): passed ({len(guards.rules)} rule verdicts, {len(guards.limits)} limits)"
        )
    return lines


def render_text(
    plan: FleetPlan,
    console: Console,
    field_manager: str = FIELD_MANAGER,
    guards: tuple[GuardReport | None, str] = (None, ""),
) -> None:
    """The plan for people: per wave, per cluster, the objects a sync would touch, with their fields
    (a create as the object's YAML), the field managers that own them, and each guard rule's verdict
    (``guards``: the report and the policy file; no file, no guards)."""
    report, policy = guards
    mode = " (offline: rendered and validated only; every object shown as a create)" if plan.offline else ""
    console.print(Text(f"revision {plan.revision}{mode}", style="bold"))
    for index, wave in enumerate(plan.waves, start=1):
        console.print(Text(f"wave {index}: {wave.name}", style="bold underline"))
        if wave.analysis:
            console.print(Text(f"  judged by analysis: {wave.analysis}"))
        for cluster in wave.clusters:
            for line in _cluster_lines(cluster, field_manager, report):
                console.print(line)
    for error in plan.errors:
        console.print(Text(f"error: {error}", style="bold red"))
    for leaving in plan.leaving:
        console.print(Text(leaving.describe(), style="bold yellow"))
    console.print(_summary(plan, console.width))
    rejected = report is not None and report.rejected
    for said in guard_summary(report, policy):
        console.print(Text(said, style="bold red" if rejected else "green"))


def _object_diff(cluster: str, change: Change) -> Iterator[str]:
    subject = f"{cluster}/{change.key.subject}"
    note = f" ({change.action}{': ' + change.message if change.message else ''})"
    before = _yaml(change.before)
    after = _yaml(change.after) if change.action is not Action.PRUNE else []
    if change.action in (Action.KEEP, Action.ERROR) or (not before and not after):
        yield f"# {change.action} {subject}: {change.message}"
        return
    lines = difflib.unified_diff(
        before,
        after,
        fromfile=f"live/{subject}" if before else "/dev/null",
        tofile=f"synced/{subject}{note}" if after else "/dev/null",
        lineterm="",
        n=3,
    )
    yield from lines


def render_unified(plan: FleetPlan, guards: tuple[GuardReport | None, str] = (None, "")) -> Iterator[str]:
    """The plan as a unified diff (live -> after the sync) per object, for a ```diff block in a
    review: comment lines (``#``) carry waves, clusters, blocked clusters, errors, kept objects and
    the guard rules each change failed."""
    report, policy = guards
    yield f"# syncer diff of revision {plan.revision}" + (" (offline)" if plan.offline else "")
    for wave in plan.waves:
        if wave.analysis:
            yield f"# wave {wave.name} judged by analysis: {wave.analysis}"
        for cluster in wave.clusters:
            yield f"# wave {wave.name}, cluster {cluster.cluster}"
            if cluster.error:
                yield f"# error: {cluster.error}"
                continue
            if cluster.blocked:
                yield f"# {stop_line(cluster)}"
            for change in cluster.changes:
                if change.action in _SHOWN:
                    for verdict in report.for_change(cluster.cluster, change.key.subject) if report else ():
                        if verdict.outcome is not GuardOutcome.PASS:
                            yield f"# guard {verdict.rule} {verdict.outcome}: {verdict.message}"
                    yield from _object_diff(cluster.cluster, change)
    for error in plan.errors:
        yield f"# error: {error}"
    for leaving in plan.leaving:
        yield f"# {leaving.describe()}"
    for line in guard_summary(report, policy):
        yield f"# {line}"
