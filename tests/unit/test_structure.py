"""The layout's rules, read from the source with ``ast`` (nothing imported or run).

1. The rollout is built by composition: no class of ``syncer/engine`` or ``syncer/rollout`` has a
   base class other than these standard ones: ``Exception``, ``Enum``, ``StrEnum``, ``IntEnum``,
   ``Protocol``, ``NamedTuple`` and ``Generic`` (a class of the project's error tree,
   ``syncer/errors.py``, may be subclassed too). A rollout part that needs another holds it.
2. Names tell one story: no module name (a file's name, ``__init__.py`` aside) is used three times
   or more under ``syncer/``, and no public class name (one not starting with ``_``) is defined
   twice there: each means one thing.
3. Objects are built whole: no module of ``syncer/agent`` or ``syncer/leader`` assigns an attribute
   of an object other than ``self`` or ``cls`` (``x.attr = ...``, ``self.x.attr = ...``, augmented
   and annotated assignments, and ``setattr(x, ...)``): what an object needs is given to its
   constructor.
4. No writer is unfenced by default: no constructor of a class of ``syncer/engine`` or
   ``syncer/agent`` (its ``__init__``, or a dataclass's fields) has a default for a parameter that
   carries the fences of its writes (typed ``Fence``, ``FenceOf``, ``RolloutHooks``, ``Writing`` or
   ``ClusterReads``): who builds a writer says how it is fenced (``NO_LEASE`` when it holds no Lease).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "syncer"
ALLOWED_BASES = frozenset({"Exception", "Enum", "StrEnum", "IntEnum", "Protocol", "NamedTuple", "Generic"})


def _modules(*packages: str) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield str(path.relative_to(ROOT.parent)), ast.parse(path.read_text(), str(path))


def _base_name(base: ast.expr) -> str:
    if isinstance(base, ast.Subscript):
        base = base.value
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else ast.unparse(base)


def _error_tree() -> frozenset[str]:
    tree = ast.parse((ROOT / "errors.py").read_text())
    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef))


def inheritance(*packages: str) -> list[str]:
    """Each class of ``packages`` whose base is not an allowed one, as ``path:line Class(Base)``."""
    allowed = ALLOWED_BASES | _error_tree()
    found = []
    for where, tree in _modules(*packages):
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                if _base_name(base) not in allowed:
                    found.append(f"{where}:{node.lineno} {node.name}({ast.unparse(base)})")
    return found


def _outside(target: ast.expr) -> bool:
    """Whether ``target`` is an attribute of an object other than ``self`` or ``cls``."""
    if isinstance(target, ast.Tuple | ast.List):
        return any(_outside(t) for t in target.elts)
    if not isinstance(target, ast.Attribute):
        return False
    owner = target.value
    return not (isinstance(owner, ast.Name) and owner.id in {"self", "cls"})


def outside_assignments(*packages: str) -> list[str]:
    """Each assignment in ``packages`` of another object's attribute, as ``path:line code``."""
    found = []
    for where, tree in _modules(*packages):
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and node.args
            ):
                owner = node.args[0]
                if not (isinstance(owner, ast.Name) and owner.id in {"self", "cls"}):
                    found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
                continue
            if any(_outside(t) for t in targets):
                found.append(f"{where}:{node.lineno} {ast.unparse(node).splitlines()[0]}")
    return found


FENCE_CARRIERS = frozenset({"Fence", "FenceOf", "RolloutHooks", "Writing", "ClusterReads"})


def _carries_fences(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = annotation.value if isinstance(annotation, ast.Constant) else ast.unparse(annotation)
    names = {n.id for n in ast.walk(ast.parse(str(text), mode="eval")) if isinstance(n, ast.Name)}
    return bool(names & FENCE_CARRIERS)


def _defaulted(arguments: ast.arguments) -> Iterator[ast.arg]:
    """The parameters of ``arguments`` that have a default."""
    positional = arguments.posonlyargs + arguments.args
    yield from positional[len(positional) - len(arguments.defaults) :]
    yield from (a for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None)


def _fence_defaults_in(where: str, tree: ast.Module) -> Iterator[str]:
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                for arg in _defaulted(node.args):
                    if _carries_fences(arg.annotation):
                        yield f"{where}:{arg.lineno} {cls.name}.{arg.arg}"
            elif (
                isinstance(node, ast.AnnAssign)
                and node.value is not None
                and _carries_fences(node.annotation)
            ):
                yield f"{where}:{node.lineno} {cls.name}.{ast.unparse(node.target)}"


def fence_defaults(*packages: str) -> list[str]:
    """Each constructor parameter (or dataclass field) of ``packages`` that carries fences and has a
    default, as ``path:line Class.name``."""
    return [found for where, tree in _modules(*packages) for found in _fence_defaults_in(where, tree)]


def test_no_writer_is_built_unfenced_by_default() -> None:
    assert fence_defaults("engine", "agent") == []


def test_no_rollout_class_inherits_from_another_project_class() -> None:
    assert inheritance("engine", "rollout") == []


def test_no_module_of_the_agent_or_the_leader_sets_another_objects_attributes() -> None:
    assert outside_assignments("agent", "leader") == []


def test_no_module_name_is_used_three_times() -> None:
    names: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(str(path.relative_to(ROOT.parent)))
    assert {name: paths for name, paths in names.items() if len(paths) >= 3} == {}


def test_each_public_class_name_means_one_thing() -> None:
    defined: dict[str, list[str]] = {}
    for where, tree in _modules("."):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined.setdefault(node.name, []).append(f"{where}:{node.lineno}")
    assert {name: places for name, places in defined.items() if len(places) > 1} == {}


def test_the_rules_find_what_they_forbid() -> None:
    source = "class A(Base):\n    pass\nclass B(StrEnum):\n    pass\n"
    tree = ast.parse(source)
    bases = [_base_name(b) for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases]
    assert [b for b in bases if b not in ALLOWED_BASES] == ["Base"]
    statements = ast.parse("x.a = 1\nself.a = 2\nself.b.c = 3\ncls.d = 4\nx.e += 1\n(x.f, y) = 1, 2").body
    flagged = [ast.unparse(s) for s in statements if any(_outside(t) for t in _targets(s))]
    assert flagged == ["x.a = 1", "self.b.c = 3", "x.e += 1", "x.f, y = (1, 2)"]
    writers = ast.parse(
        "class W:\n"
        "    def __init__(self, a: int = 1, *, fences: FenceOf = f, hooks: RolloutHooks) -> None: ...\n"
        "class D:\n    fence: Fence = UNFENCED\n    writing: 'Writing'\n    other: int = 0\n"
    )
    assert list(_fence_defaults_in("w.py", writers)) == ["w.py:2 W.fences", "w.py:4 D.fence"]


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    return [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
