"""The README says what ``scripts/bootstrap`` installs, and ``scripts/env.sh`` works sourced from any
folder."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bootstrap_packages() -> list[str]:
    text = (ROOT / "scripts" / "bootstrap").read_text()
    found: list[str] = []
    for words in re.findall(r"^debs\+?=\(([^)]*)\)", text, re.MULTILINE):
        found += words.split()
    found += re.findall(r"debs\+=\((python3-venv)\)", text)
    return found


def test_the_readme_lists_every_debian_package_bootstrap_installs() -> None:
    packages = _bootstrap_packages()
    assert {"git", "redis-server", "chromium", "buildah", "python3-venv"} <= set(packages)
    readme = " ".join((ROOT / "README.md").read_text().split())
    start = readme.index("install the Debian packages")
    said = readme[start : readme.index("```", start)]
    for package in packages:
        assert f"`{package}`" in said or re.search(rf"[` ]{re.escape(package)}[` ,]", said), package


def test_env_sh_sourced_from_another_folder_finds_the_repositorys_venv(tmp_path: Path) -> None:
    script = f'. "{ROOT / "scripts" / "env.sh"}" && printf "%s\\n%s" "$VIRTUAL_ENV" "${{PATH%%:*}}"'
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=30
    )
    assert done.stdout.splitlines() == [str(ROOT / ".venv"), str(ROOT / ".venv" / "bin")]
