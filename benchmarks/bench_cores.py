"""How busy a league keeps the cores: CPU-seconds per wall-second of a command's process tree.

Runs a command (by default `make league`), samples its whole process tree once a second with
psutil, and reports the wall time, the CPU time of the tree, and the CPU rate while learners
train in processes of their own (`c4core.league.processes.train_learners`, and the other ranks of a
data-parallel learner: a sample counts as training when at least `--learners` spawned processes
are alive and busy, a rank server waiting for its next learner not counting; 2 for two roles, 1
for one learner on two ranks, whose rank 0 is not spawned)::

    python benchmarks/bench_cores.py --out /tmp/cores.json -- make league LEAGUE=cores
    python benchmarks/bench_cores.py --load -- make league LEAGUE=loaded   # beside a busy core

``--load`` runs ``python -c "while True: pass"`` beside the command for its whole length: the
one-core background load of the issue's "at most 2x" check. The target during training is at
least 1.7 CPU-seconds per wall-second on this 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

from c4core.league.processes import IDLE_RANK


def tree_cpu(root: psutil.Process, spawned: set[int]) -> tuple[float, int]:
    """CPU seconds of `root`, its live descendants and every child they have reaped, and how
    many learner processes (spawned by multiprocessing, and not a rank server waiting for its next
    learner) are alive; the pids of the spawned ones are added to `spawned`."""
    total, learners = 0.0, 0
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
            if "spawn_main" in " ".join(p.cmdline()):
                spawned.add(p.pid)
                learners += p.name() != IDLE_RANK
        except psutil.Error:  # it ended between listing and reading
            pass
    return total, learners


def measure(command: list[str], load: bool, learners: int = 2) -> dict[str, float]:
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load else None
    start = time.perf_counter()
    proc = subprocess.Popen(command)
    root = psutil.Process(proc.pid)
    samples: list[tuple[float, float, int]] = []  # (time, cpu, learners)
    spawned: set[int] = set()
    peak = 0.0
    while proc.poll() is None:
        try:
            cpu, alive = tree_cpu(root, spawned)
        except psutil.Error:
            break
        peak = max(peak, cpu)  # reaped grandchildren drop out of the sum: keep the running total
        samples.append((time.perf_counter() - start, peak, alive))
        time.sleep(1.0)
    wall = time.perf_counter() - start
    if burner is not None:
        burner.kill()
    windows = [
        (t1 - t0, c1 - c0)
        for (t0, c0, n0), (t1, c1, n1) in zip(samples, samples[1:], strict=False)
        if n0 >= learners and n1 >= learners
    ]
    rates = [cpu / seconds for seconds, cpu in windows]
    training = sum(seconds for seconds, _ in windows)
    trained_cpu = sum(cpu for _, cpu in windows)
    return {
        "returncode": proc.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(peak, 1),
        "cpu_per_wall": round(peak / wall, 3),
        "training_s": round(training, 1),
        "training_cpu_per_wall": round(trained_cpu / training, 3) if training else None,
        "training_median_window": round(statistics.median(rates), 3) if rates else None,
        "spawned_processes": len(spawned),
        "load": load,
        "learners": learners,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--load", action="store_true", help="keep one core busy beside the command")
    p.add_argument("--out", type=Path, help="also write the result here as JSON")
    p.add_argument(
        "--learners", type=int, default=2, help="spawned processes alive that mark training (default: 2)"
    )
    p.add_argument("command", nargs="*", default=["make", "league"])
    args = p.parse_args()
    result = measure(args.command, args.load, args.learners) | {"command": " ".join(args.command)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0 if result["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
