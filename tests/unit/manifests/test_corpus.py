"""Hostile and broken fleet repositories: each case names the exact problems it must produce.

A case is a directory under ``corpus/`` holding ``repo/`` (the repository content) and
``expected.yaml`` (a description, optional ``LoadOptions`` overrides, and the problems).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.bounded.problems import ReadProblem
from syncer.errors import ManifestError
from syncer.manifests import LoadOptions, ProblemKind, load_fleet

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())


def _expected(case: str) -> dict[str, Any]:
    loaded = yaml.safe_load((CORPUS / case / "expected.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES)
def test_case_reports_exactly_the_expected_problems(case: str) -> None:
    expected = _expected(case)
    options = LoadOptions(**expected.get("options", {}))

    with pytest.raises(ManifestError) as caught:
        load_fleet(CORPUS / case / "repo", "corpus", options)

    found = sorted((p.kind, p.location.path, p.location.line) for p in caught.value.problems)
    wanted = sorted((p["kind"], p["file"], p["line"]) for p in expected["problems"])
    assert found == wanted, "\n".join(str(p) for p in caught.value.problems)


@pytest.mark.parametrize("case", CASES)
def test_case_problems_are_well_formed(case: str) -> None:
    with pytest.raises(ManifestError) as caught:
        load_fleet(CORPUS / case / "repo", "corpus", LoadOptions(**_expected(case).get("options", {})))

    for found in caught.value.problems:
        assert found.kind in {*ProblemKind, *ReadProblem}
        assert found.message
        assert not Path(found.location.path).is_absolute()
        assert str(found).startswith(str(found.location) + ": " + found.kind + ": ")
