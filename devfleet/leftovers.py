"""``python -m devfleet.leftovers NAME=VALUE``: the processes whose environment holds ``NAME=VALUE``.

``scripts/test`` marks its pytest run with a unique environment variable that every process the tests
start inherits; this lists those still alive afterwards (one ``PID command line`` each), leaving out
itself and the shells above it. Processes of other users or runs (without the mark) are never listed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _ancestors(proc: Path) -> set[int]:
    """This process and every process above it (the shells that ran it carry the mark too)."""
    found, pid = set(), os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat = (proc / str(pid) / "stat").read_text()
        except OSError:
            break
        pid = int(stat.rpartition(")")[2].split()[1])
    return found


def marked(mark: str, proc: Path = Path("/proc")) -> list[tuple[int, str]]:
    """``(pid, command line)`` of every process whose environment holds ``mark`` exactly, other than
    this process and its ancestors."""
    wanted = mark.encode()
    skip = _ancestors(proc)
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
            if wanted not in environment:
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        found.append((int(entry.name), command.strip()))
    return sorted(found)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or "=" not in argv[0]:
        print("usage: python -m devfleet.leftovers NAME=VALUE", file=sys.stderr)
        return 2
    for pid, command in marked(argv[0]):
        print(f"{pid} {command}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
