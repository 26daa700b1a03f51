"""The Dockerfile's promises, read from the file: stages, runtime packages, user, entrypoint, context."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _final_stage() -> list[tuple[str, str]]:
    steps = _instructions()
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def test_two_stages_on_the_same_slim_python_base() -> None:
    steps = _instructions()
    froms = [rest for word, rest in steps if word == "FROM"]
    assert len(froms) == 2
    assert froms[0] == "${PYTHON_IMAGE} AS build"
    assert froms[1] == "${PYTHON_IMAGE}"
    base = next(rest for word, rest in steps if word == "ARG" and rest.startswith("PYTHON_IMAGE="))
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.1[1-9]-slim-[a-z]+", base), base


def test_the_runtime_stage_has_git_gnupg_ssh_and_only_the_built_environment() -> None:
    final = _final_stage()
    runs = " ".join(rest for word, rest in final if word == "RUN")
    installed = re.search(r"apt-get install -y --no-install-recommends ([a-z0-9 .+-]+?) &&", runs)
    assert installed is not None
    assert installed.group(1).split() == ["git", "gnupg", "openssh-client"]
    assert "rm -rf /var/lib/apt/lists/*" in runs
    copies = [rest for word, rest in final if word == "COPY"]
    assert copies == ["--from=build /opt/syncer /opt/syncer"]
    build = " ".join(
        rest for word, rest in _instructions()[: len(_instructions()) - len(final)] if word == "RUN"
    )
    # Only the wheels scripts/image locked, each checked against its hash; no index is asked.
    assert "pip install --no-index --find-links /wheels/wheels --require-hashes" in build
    assert "--requirement /wheels/requirements.lock" in build
    assert "pip uninstall --yes pip" in build
    assert "[dev]" not in DOCKERFILE.read_text(encoding="utf-8")


def test_it_runs_syncer_run_as_the_non_root_user_the_chart_expects() -> None:
    final = _final_stage()
    user = [rest for word, rest in final if word == "USER"]
    values = yaml.safe_load((ROOT / "chart" / "values.yaml").read_text(encoding="utf-8"))
    context = values["podSecurityContext"]
    assert user == [f"{context['runAsUser']}:{context['runAsGroup']}"]
    assert int(context["runAsUser"]) > 0
    entrypoint = [rest for word, rest in final if word == "ENTRYPOINT"]
    assert [json.loads(e) for e in entrypoint] == [["syncer", "run"]]
    assert [rest for word, rest in final if word == "EXPOSE"] == [str(values["service"]["port"])]


def test_the_build_context_holds_what_the_build_copies() -> None:
    ignore = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert ignore[0] == "*", "the context starts empty and names what it lets in"
    admitted = {line.removeprefix("!").rstrip("/") for line in ignore if line.startswith("!")}
    copied = set()
    for word, rest in _instructions():
        if word == "COPY" and not rest.startswith("--from"):
            copied.update(source.rstrip("/") for source in rest.split()[:-1])
    assert copied == admitted
    script = (ROOT / "scripts" / "image").read_text(encoding="utf-8")
    for name in copied:
        assert "out=" + name in script, f"scripts/image does not write {name}"
