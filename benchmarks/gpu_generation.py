"""One AlphaZero-style league generation on a CUDA GPU, timed iteration by iteration, with the
GPU's peak memory and the new snapshot's dev-suite figures: the check that issue #30 asks to have
ready for a task that is lent a GPU ("When a CUDA GPU is at hand"), before the `gpu` profile
changes to the recipe it tries.

    python benchmarks/gpu_generation.py --out $OUT/gpu                      # on the GPU machine
    python benchmarks/gpu_generation.py --out /tmp/gpucheck --device cpu \\
        --iterations 1 --games 16                                           # the script itself, here

The recipe is `CANDIDATE`: the `gpu` profile's 4x64 net and 2,048 games an iteration, its main
agent alone, trained by the AlphaZero-style learner from a fresh net with the `cpu` profile's recipe, what won
on the CPU (Gumbel's root at 16 simulations, solver rescoring from ply 16, a quarter of the games
against the league; docs/BENCHMARKS.md). Each learner iteration appends a line to ``iterations.jsonl``
under --out as it ends (seconds, the GPU's peak memory, the learner's metrics), so a run cut off
by its time limit still leaves its figures; at the end ``result.json`` adds the generation's
time and the snapshot on the dev suite, raw and with 256 simulations (the ablation's
`suite_row`), with the suite's own peak memory.
A second run into the same --out resumes the league instead of training again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from ablation import suite_row  # the ablation's suite row: raw and with 256 simulations

from c4core.config import PROFILES, overridden, with_training
from c4core.games.connect4.suite import default_suite_path
from c4core.league.generation import run_league
from c4core.league.store import LocalStore

CANDIDATE: dict[str, Any] = {
    "name": "gpu-check",
    "generations": 1,
    "roles": ("main",),
    "processes": 1,  # the learner trains in this process, so its iterations reach the log
    "alphazero_from": 1,
    # the `cpu` profile's AlphaZero-style recipe, 2,048 games an iteration, the learner alone on the GPU
    "alphazero": replace(PROFILES["cpu"].alphazero, games=2048, ranks=1),
    "net": {"precision": "bfloat16"},
}
"""The `gpu` profile's fields this check replaces: the recipe a GPU would run."""


def peak_mib(device: torch.device) -> float | None:
    """The most GPU memory torch held since the last reset, in MiB (None off CUDA)."""
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1) if device.type == "cuda" else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", required=True, help="folder for the league, iterations.jsonl and result.json"
    )
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--iterations", type=int, default=None, help="learner iterations (recipe: 10)")
    parser.add_argument("--games", type=int, default=None, help="games an iteration (recipe: 2,048)")
    parser.add_argument("--suite", default=None, help="suite file (default: ../shared/suite/dev.jsonl)")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("no CUDA device here: pass --device cpu to check the script itself")
    suite_path = args.suite or default_suite_path()
    if suite_path is None or not Path(suite_path).exists():
        parser.error("no dev suite: pass --suite")
    device = torch.device(args.device)
    config = with_training(overridden(PROFILES["gpu"], CANDIDATE), args.iterations, args.games)
    config = replace(config, device=args.device)
    out = Path(args.out)
    store = LocalStore(out / "league")
    log = out / "iterations.jsonl"
    torch.set_num_threads(1)
    start = time.perf_counter()

    def on_iteration(member: str, i: int, metrics: dict[str, float]) -> None:
        row = {"member": member, "iteration": i, "seconds": round(time.perf_counter() - start, 1)}
        row |= {"peak_mib": peak_mib(device), "metrics": metrics}
        with log.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)

    run_league(store, config, on_iteration=on_iteration)
    seconds = time.perf_counter() - start
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t = time.perf_counter()
    row = suite_row(str(out / "league"), 1, str(suite_path), args.device)
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else args.device,
        "training": config.describe_training(),
        "generation_seconds": round(seconds, 1),
        **{f"suite_{k}": v for k, v in row.items() if k != "generation"},
        "suite_seconds": round(time.perf_counter() - t, 1),
        "suite_peak_mib": peak_mib(device),
    }
    text = json.dumps(result, indent=1)
    (out / "result.json").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
