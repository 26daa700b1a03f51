"""How fast the ``syncer`` command answers, as whole processes, side by side with ``kubectl``.

Run: ``python bench/bench_startup.py [--runs 15]``. Each command is started as a person starts it
(the ``syncer`` console script of this Python environment; ``kubectl`` from ``PATH``) and timed from
start to exit; the median of ``--runs`` is printed in milliseconds, with the ratio to
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


def median_ms(argv: list[str], runs: int, ok: tuple[int, ...] = (0,)) -> float:
    env = child_environment()
    subprocess.run(argv, capture_output=True, check=False, env=env)  # warm-up: caches, bytecode
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, check=False, env=env)
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode not in ok:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return statistics.median(times)


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
    measured = {name: median_ms(argv, args.runs, ok) for name, (argv, ok) in commands.items()}
    baseline = measured["kubectl version --client"]
    met = True
    for name, ms in measured.items():
        goal = GOALS_MS.get(name)
        verdict = ""
        if goal is not None:
            verdict = f"  goal <= {goal:g} ms: {'met' if ms <= goal else 'MISSED'}"
            met = met and ms <= goal
        print(f"{name:<28} {ms:8.1f} ms  {ms / baseline:5.1f}x kubectl version --client{verdict}")
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
