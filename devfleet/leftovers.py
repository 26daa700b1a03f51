"""``python -m devfleet.leftovers NAME=VALUE``: the processes whose environment holds ``NAME=VALUE``.

``scripts/test`` marks its pytest run with a unique environment variable that every process the tests
start inherits; this lists those still alive afterwards, leaving out itself and the shells above it:
one line each, ``PID [test that started it] command line`` (the test from ``SYNCER_TEST_ID``, which the
tests' ``run_mark`` plugin sets for each test). Processes of other users or runs (without the mark)
are never listed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

# Set by the tests' run_mark plugin to the node id of the test running; every process inherits it.
TEST_ID = b"SYNCER_TEST_ID="


@dataclass(frozen=True, order=True)
class Leftover:
    """A marked process still alive: its PID, command line and the test it was started under."""

    pid: int
    command: str
    test: str = ""

    def line(self) -> str:
        return f"{self.pid} [{self.test or 'no test'}] {self.command}"


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


def marked(mark: str, proc: Path = Path("/proc")) -> list[Leftover]:
    """Every process whose environment holds ``mark`` exactly, other than this process and its
    ancestors."""
    wanted = mark.encode()
    skip = _ancestors(proc)
    found: list[Leftover] = []
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
        test = next((v[len(TEST_ID) :] for v in environment if v.startswith(TEST_ID)), b"")
        found.append(Leftover(int(entry.name), command.strip(), test.decode(errors="replace")))
    return sorted(found)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or "=" not in argv[0]:
        print("usage: python -m devfleet.leftovers NAME=VALUE", file=sys.stderr)
        return 2
    for leftover in marked(argv[0]):
        print(leftover.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
