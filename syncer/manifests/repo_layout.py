"""Reading a checked-out fleet repository: which files exist, within which limits, as text.

The layout is ``fleet.yaml`` at the root, shared manifests under ``base/``, and one directory per
cluster under ``clusters/`` holding that cluster's manifests and an optional ``patches.yaml``.
Only ``*.yaml`` and ``*.yml`` files are read; entries whose name starts with a dot are skipped, as is
everything else at the root (README, docs, CI files).

Symlinks are followed only when they resolve to a path inside the repository; a symlink that leaves
it, dangles or loops back into its own directory is a problem. Anything that is not a regular file
(a FIFO, a device) is never read. Sizes are checked before reading and again while reading: the same
rules as the agent's own files (``syncer.bounded``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from syncer.bounded.files import decode, read_bounded
from syncer.bounded.problems import problem
from syncer.errors import Problem
from syncer.manifests.options import LoadOptions
from syncer.manifests.problems import ProblemKind

FLEET_FILE = "fleet.yaml"
SHARED_DIR = "base"
CLUSTERS_DIR = "clusters"
PATCHES_FILE = "patches.yaml"
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class RepoFile:
    """A file of the repository: its repo-relative POSIX path and its UTF-8 text."""

    path: str
    text: str


@dataclass(frozen=True)
class RepoLayout:
    """The files of a revision, sorted by path within each group."""

    fleet: RepoFile | None
    shared: tuple[RepoFile, ...]
    clusters: Mapping[str, tuple[RepoFile, ...]]
    patches: Mapping[str, RepoFile]


class _TreeReader:
    """Reads files under one root, enforcing the symlink rules and the size budget."""

    def __init__(self, root: Path, options: LoadOptions) -> None:
        self.root = root
        self.options = options
        self.problems: list[Problem] = []
        self.total_bytes = 0
        self.files = 0
        self.exhausted = False

    def resolve(self, path: Path, rel: str) -> Path | None:
        """The path to open for ``path``, or None (with a problem) when it may not be followed."""
        if not path.is_symlink():
            return path
        try:
            target = path.resolve()
        except (RuntimeError, OSError):
            self.problems.append(problem(ProblemKind.SYMLINK, "symlink loops", rel))
            return None
        if not target.is_relative_to(self.root):
            self.problems.append(
                problem(ProblemKind.SYMLINK_ESCAPE, "symlink points outside the repository", rel)
            )
            return None
        if not target.exists():
            self.problems.append(problem(ProblemKind.SYMLINK, "symlink points to nothing", rel))
            return None
        return target

    def _counted(self, rel: str) -> bool:
        """Whether one more file may be read within the file-count limit."""
        self.files += 1
        if self.files > self.options.max_files:
            message = f"more than {self.options.max_files} files to read"
            self.problems.append(problem(ProblemKind.REPO_TOO_LARGE, message, rel))
            self.exhausted = True
            return False
        return True

    def _within_budget(self, data: bytes, rel: str) -> bool:
        self.total_bytes += len(data)
        if self.total_bytes > self.options.max_total_bytes:
            message = f"files read so far exceed {self.options.max_total_bytes} bytes; stopped reading here"
            self.problems.append(problem(ProblemKind.REPO_TOO_LARGE, message, rel))
            self.exhausted = True
            return False
        return True

    def read(self, path: Path, rel: str) -> RepoFile | None:
        """A file's text, or None (with a problem) when it may not be read: the type and size rules
        of every file syncer reads (``syncer.bounded.files``), then the repository's own budget."""
        target = None if self.exhausted else self.resolve(path, rel)
        if target is None or not self._counted(rel):
            return None
        data = read_bounded(target, rel, self.options.max_file_bytes)
        if isinstance(data, Problem):
            self.problems.append(data)
            return None
        if not self._within_budget(data, rel):
            return None
        text = decode(data, rel)
        if isinstance(text, Problem):
            self.problems.append(text)
            return None
        return RepoFile(rel, text)

    def entries(self, directory: Path, rel: str) -> list[tuple[Path, str]]:
        """Visible entries of a directory, sorted by name, with their repo-relative paths; a directory
        that cannot be listed (not a directory, no permission) is a problem."""
        if not directory.is_dir():
            self.problems.append(problem(ProblemKind.LAYOUT, "must be a directory", rel))
            return []
        try:
            listed = os.listdir(directory)
        except OSError as err:
            self.problems.append(problem(ProblemKind.LAYOUT, f"cannot be listed: {err.strerror}", rel))
            return []
        names = sorted(name for name in listed if not name.startswith("."))
        return [(directory / name, f"{rel}/{name}" if rel else name) for name in names]

    def yaml_files(self, directory: Path, rel: str) -> list[RepoFile]:
        """Every YAML file below a directory, sorted by path."""
        start = self.resolve(directory, rel)
        if start is None:
            return []
        found: list[RepoFile] = []
        stack: list[tuple[Path, str, frozenset[Path]]] = [(start, rel, frozenset({start.resolve()}))]
        while stack:
            current, current_rel, ancestors = stack.pop()
            subdirectories: list[tuple[Path, str, frozenset[Path]]] = []
            for path, path_rel in self.entries(current, current_rel):
                if path.is_dir():
                    real = self.resolve(path, path_rel)
                    if real is None:
                        continue
                    if real.resolve() in ancestors:
                        self.problems.append(
                            problem(ProblemKind.SYMLINK, "symlink loops to a parent", path_rel)
                        )
                        continue
                    subdirectories.append((real, path_rel, ancestors | {real.resolve()}))
                elif path.name.endswith(YAML_SUFFIXES) or (path.is_symlink() and not path.exists()):
                    read = self.read(path, path_rel)
                    if read is not None:
                        found.append(read)
            stack.extend(reversed(subdirectories))
        return sorted(found, key=lambda f: f.path)


def read_layout(root: Path, options: LoadOptions) -> tuple[RepoLayout, list[Problem]]:
    """The repository's files and every problem met while reading them."""
    root = root.resolve()
    reader = _TreeReader(root, options)
    fleet: RepoFile | None = None
    if os.path.lexists(root / FLEET_FILE):
        fleet = reader.read(root / FLEET_FILE, FLEET_FILE)
    else:
        reader.problems.append(problem(ProblemKind.FLEET, "the repository has no fleet.yaml", FLEET_FILE))
    shared: list[RepoFile] = []
    if os.path.lexists(root / SHARED_DIR):
        shared = reader.yaml_files(root / SHARED_DIR, SHARED_DIR)
    clusters: dict[str, tuple[RepoFile, ...]] = {}
    patches: dict[str, RepoFile] = {}
    clusters_dir = (
        reader.resolve(root / CLUSTERS_DIR, CLUSTERS_DIR) if (root / CLUSTERS_DIR).is_dir() else None
    )
    for path, rel in reader.entries(clusters_dir, CLUSTERS_DIR) if clusters_dir else []:
        if not path.is_dir():
            if path.name.endswith(YAML_SUFFIXES):
                reader.problems.append(
                    problem(
                        ProblemKind.LAYOUT, "manifests under clusters/ belong in a cluster directory", rel
                    )
                )
            continue
        files = reader.yaml_files(path, rel)
        patch_path = f"{rel}/{PATCHES_FILE}"
        clusters[path.name] = tuple(f for f in files if f.path != patch_path)
        patch = next((f for f in files if f.path == patch_path), None)
        if patch is not None:
            patches[path.name] = patch
    return RepoLayout(fleet, tuple(shared), clusters, patches), reader.problems
