from __future__ import annotations

import os
from pathlib import Path

from syncer.bounded.problems import ReadProblem
from syncer.manifests.options import LoadOptions
from syncer.manifests.problems import ProblemKind
from syncer.manifests.repo_layout import read_layout

FLEET = "apiVersion: syncer.dev/v1alpha1\nkind: Fleet\nclusters:\n  - name: eu-1\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_files_are_grouped_and_sorted(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "fleet.yaml": FLEET,
            "base/z.yaml": "",
            "base/a/b.yml": "",
            "base/README.md": "not read",
            "base/.hidden.yaml": "not read",
            "clusters/eu-1/x.yaml": "",
            "clusters/eu-1/patches.yaml": "patches: []\n",
            "clusters/README.md": "not read",
            "notes.yaml": "outside the layout",
        },
    )

    layout, problems = read_layout(tmp_path, LoadOptions())

    assert problems == []
    assert layout.fleet is not None
    assert layout.fleet.text == FLEET
    assert [f.path for f in layout.shared] == ["base/a/b.yml", "base/z.yaml"]
    assert {name: [f.path for f in files] for name, files in layout.clusters.items()} == {
        "eu-1": ["clusters/eu-1/x.yaml"]
    }
    assert layout.patches["eu-1"].path == "clusters/eu-1/patches.yaml"


def test_symlinks_inside_the_repository_are_followed(tmp_path: Path) -> None:
    _write(tmp_path, {"fleet.yaml": FLEET, "shared/ns.yaml": "kind: Namespace\n"})
    (tmp_path / "base").mkdir()
    os.symlink("../shared/ns.yaml", tmp_path / "base" / "ns.yaml")
    os.symlink("../shared", tmp_path / "base" / "linked")

    layout, problems = read_layout(tmp_path, LoadOptions())

    assert problems == []
    assert [(f.path, f.text) for f in layout.shared] == [
        ("base/linked/ns.yaml", "kind: Namespace\n"),
        ("base/ns.yaml", "kind: Namespace\n"),
    ]


def test_a_directory_symlink_to_its_parent_is_a_loop(tmp_path: Path) -> None:
    _write(tmp_path, {"fleet.yaml": FLEET, "base/a/ns.yaml": ""})
    os.symlink("..", tmp_path / "base" / "a" / "up")

    layout, problems = read_layout(tmp_path, LoadOptions())

    assert [(p.kind, p.location.path) for p in problems] == [(ProblemKind.SYMLINK, "base/a/up")]
    assert [f.path for f in layout.shared] == ["base/a/ns.yaml"]


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    _write(tmp_path, {"fleet.yaml": FLEET})
    (tmp_path / "base").mkdir()
    os.mkfifo(tmp_path / "base" / "pipe.yaml")

    layout, problems = read_layout(tmp_path, LoadOptions())

    assert [(p.kind, p.location.path) for p in problems] == [(ReadProblem.FILE_TYPE, "base/pipe.yaml")]
    assert layout.shared == ()


def test_a_missing_fleet_file_is_a_problem(tmp_path: Path) -> None:
    _write(tmp_path, {"base/ns.yaml": ""})

    layout, problems = read_layout(tmp_path, LoadOptions())

    assert layout.fleet is None
    assert [(p.kind, p.location.path) for p in problems] == [(ProblemKind.FLEET, "fleet.yaml")]
