"""How fast the ``syncer`` command answers, as whole processes, side by side with ``kubectl``.

Run: ``python bench/bench_startup.py [--runs 15]``. Each command is started as a person starts it
(the ``syncer`` console script of this Python environment; ``kubectl`` from ``PATH``) and timed from
start to exit; the median of ``--runs`` is printed in milliseconds (and the CPU time the process
used, which load elsewhere on the machine disturbs less than the wall clock), with the ratio to
``kubectl version --client``. Goals: ``syncer --version`` and ``syncer --help`` within 150 ms,
``syncer render`` of examples/repo within 500 ms. ``syncer diff --offline`` renders and validates
only (no cluster), so it is shown next to ``render``.

Each command runs once untimed first, and with ``PYTHONDONTWRITEBYTECODE`` removed from its
environment, so that Python's bytecode cache is warm as it is for an installed command (pip compiles
it at install time); without a cache every run would also compile syncer's modules. The load
average of the machine is printed before and after: on a shared machine, figures taken under load
are not comparable.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "repo"
GOALS_MS = {"syncer --version": 150.0, "syncer --help": 150.0, "syncer render": 500.0}


def syncer_command() -> list[str]:
    script = Path(sys.executable).with_name("syncer")
    return [str(script)] if script.exists() else [sys.executable, "-m", "syncer"]


def child_environment() -> dict[str, str]:
    """This environment, with Python's bytecode cache allowed (as for an installed command)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(argv: list[str], ok: tuple[int, ...]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) milliseconds of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False, env=child_environment())
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def measure(
    commands: dict[str, tuple[list[str], tuple[int, ...]]], runs: int
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU milliseconds per command; one untimed run each first (caches, bytecode),
    then the commands take turns run by run, so that load elsewhere hits them alike."""
    for argv, ok in commands.values():
        run_once(argv, ok)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (argv, ok) in commands.items():
            samples[name].append(run_once(argv, ok))
    return {
        name: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
        for name, got in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    syncer = syncer_command()
    commands = {
        "kubectl version --client": (["kubectl", "version", "--client"], (0,)),
        "syncer --version": ([*syncer, "--version"], (0,)),
        "syncer --help": ([*syncer, "--help"], (0,)),
        "syncer render": ([*syncer, "render", "--repo", str(EXAMPLE)], (0,)),
        "syncer diff --offline": ([*syncer, "diff", "--offline", "--repo", str(EXAMPLE), "-o", "json"], (1,)),
    }
    print(f"syncer started as: {' '.join(syncer)}; median of {args.runs} runs, whole process")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    measured = measure(commands, args.runs)
    baseline = measured["kubectl version --client"][0]
    met = True
    for name, (ms, cpu) in measured.items():
        goal = GOALS_MS.get(name)
        verdict = ""
        if goal is not None:
            verdict = f"  goal <= {goal:g} ms: {'met' if ms <= goal else 'MISSED'}"
            met = met and ms <= goal
        print(
            f"{name:<28} {ms:8.1f} ms (cpu {cpu:6.1f} ms)"
            f"  {ms / baseline:5.1f}x kubectl version --client{verdict}"
        )
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
