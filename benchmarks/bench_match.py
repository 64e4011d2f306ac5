"""Whole-process throughput of `c4 match`, as a user runs it (start-up and imports included).

Runs each command several times in a row and reports the median wall time and games/s.
Usage: python benchmarks/bench_match.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = [
    ("random", "random", 2_000_000),
    ("tactical", "random", 2_000_000),
    ("tactical", "tactical", 1_000_000),
]


def c4_command() -> list[str]:
    exe = Path(sys.executable).with_name("c4")
    return [str(exe)] if exe.exists() else [shutil.which("c4") or "c4"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    c4 = c4_command()
    # one untimed run compiles and caches the numba kernels, as any first use would
    subprocess.run([*c4, "match", "random", "random", "--games", "2"], check=True, capture_output=True)
    print(f"{'match':<22}{'games':>12}{'median s':>10}{'games/s':>14}")
    for a, b, games in CASES:
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            subprocess.run(
                [*c4, "match", a, b, "--games", str(games), "--json"], check=True, capture_output=True
            )
            times.append(time.perf_counter() - start)
        med = statistics.median(times)
        print(f"{a + ' vs ' + b:<22}{games:>12,}{med:>10.2f}{games / med:>14,.0f}")


if __name__ == "__main__":
    main()
