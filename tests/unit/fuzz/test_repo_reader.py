"""Property tests over the repository reader: random trees of files, directories, symlinks and FIFOs
in unexpected places (fleet.yaml a directory, clusters/ a symlink out of the tree, loops, dangling
links) are read into a fleet or into manifest problems, never into another exception."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from syncer.errors import ManifestError
from syncer.manifests import LoadOptions, load_fleet
from tests.unit.fuzz.strategies import ENTRY_KINDS, LINK_TARGETS, TREE_NAMES, raised_by

SMALL = LoadOptions(max_files=50, max_events=20_000, max_nodes=2_000, max_documents=20)
FLEET = yaml.safe_dump({"apiVersion": "syncer.dev/v1alpha1", "kind": "Fleet", "clusters": [{"name": "eu-1"}]})
NAMESPACE = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "redis"}})
ENTRIES = st.lists(st.tuples(TREE_NAMES, ENTRY_KINDS, LINK_TARGETS), max_size=10)


def build(root: Path, entries: list[tuple[str, str, str]]) -> None:
    for rel, kind, target in entries:
        path = root / rel
        if os.path.lexists(path):
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                path.mkdir()
            elif kind == "symlink":
                os.symlink(rel if target == "loop" else target, path)
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                path.write_text(FLEET if rel == "fleet.yaml" else NAMESPACE)
        except OSError:
            continue  # the tree cannot take this entry where earlier ones went


@given(ENTRIES)
# Found by this harness: base/ as a file crashed the reader with NotADirectoryError.
@example([("base", "file", "."), ("fleet.yaml", "file", ".")])
@example([("fleet.yaml", "dir", ".")])
@example([("clusters", "symlink", "/"), ("fleet.yaml", "file", ".")])
@example([("fleet.yaml", "file", "."), ("clusters/eu-1", "symlink", "..")])
@example([("fleet.yaml", "file", "."), ("clusters/eu-1/redis.yaml", "fifo", ".")])
@example([("fleet.yaml", "file", "."), ("base", "symlink", "loop")])
def test_any_tree_is_a_fleet_or_manifest_problems(entries: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        build(root, entries)
        err = raised_by(lambda: load_fleet(root, "fuzz", SMALL), ManifestError)
        problems = err.problems if isinstance(err, ManifestError) else ()
        assert all(not Path(p.location.path).is_absolute() for p in problems)


@given(ENTRIES)
def test_an_unreadable_directory_is_a_problem_not_a_crash(entries: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        build(root, [("fleet.yaml", "file", "."), ("clusters/eu-1/redis.yaml", "file", "."), *entries])
        locked = root / "clusters" / "eu-1"
        if locked.is_dir() and not locked.is_symlink():
            locked.chmod(0)
        try:
            err = raised_by(lambda: load_fleet(root, "fuzz", SMALL), ManifestError)
        finally:
            if locked.is_dir() and not locked.is_symlink():
                locked.chmod(0o755)
        assert err is None or isinstance(err, ManifestError)
