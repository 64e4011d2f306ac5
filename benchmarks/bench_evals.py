"""Network evaluations a second while self-playing (issue #30), against the limit of one core's
forward throughput on the same net and the same batches, in float32 and in bfloat16, side by side.

    python benchmarks/bench_evals.py /tmp/abl/base/gen6.pt [--games 1024] [--rounds 2]

Each round, for each precision (the order alternating between rounds), on one torch thread:
1. one AlphaZero-style self-play iteration of the `cpu` recipe from the checkpoint (one rank, no
   league games, no solver rescoring), with the net's `evaluate` wrapped to count the positions
   it evaluates and the seconds spent inside it;
2. the ceiling: every tenth batch that self-play evaluated (the forward's own inputs, kept by a
   forward pre-hook), forwarded again back to back by the same net. Its positions a second are
   what one core gives that net at those batch sizes, with nothing else to do.
Prints one JSON line per round and precision, and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from typing import Any

import torch

from c4core.config import PRECISIONS, PROFILES
from c4core.games import BatchState
from c4core.learners.alphazero import self_play
from c4core.learners.net import Checkpoint, PolicyValueNet

KEEP_EVERY = 10
"""Every how many evaluated batches one is kept for the ceiling's replay."""


def one_round(checkpoint: Checkpoint, precision: str, games: int, seed: int) -> dict[str, Any]:
    """Self-play with counted evaluations, then the kept batches replayed (see the docstring)."""
    assert checkpoint.net_config is not None
    net = PolicyValueNet(replace(checkpoint.net_config, precision=precision), checkpoint.game)
    net.load_state_dict(checkpoint.model)
    net.eval()
    evaluate = net.evaluate
    counted = {"positions": 0, "calls": 0, "seconds": 0.0}
    kept: list[tuple[torch.Tensor, torch.Tensor]] = []
    keep_next = [False]

    def keep_inputs(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        # the forward's own inputs, so keeping a batch costs no observation built again
        if keep_next[0]:
            kept.append((inputs[0], inputs[1]))
            keep_next[0] = False

    def counting(boards: BatchState) -> tuple[torch.Tensor, torch.Tensor]:
        keep_next[0] = counted["calls"] % KEEP_EVERY == 0
        start = time.perf_counter()
        out = evaluate(boards)
        counted["seconds"] += time.perf_counter() - start
        counted["positions"] += len(out[1])
        counted["calls"] += 1
        return out

    net.evaluate = counting  # type: ignore[method-assign]  # the search calls it through the instance
    hook = net.register_forward_pre_hook(keep_inputs)
    recipe = replace(PROFILES["cpu"].alphazero, games=games, ranks=1, solve_from=0, league_share=0.0)
    start = time.perf_counter()
    self_play(net, recipe, torch.Generator().manual_seed(seed), checkpoint.game)
    selfplay_s = time.perf_counter() - start
    hook.remove()
    start = time.perf_counter()
    with torch.no_grad():
        for observation, legal in kept:
            net(observation, legal)
    replay_s = time.perf_counter() - start
    replayed = sum(len(legal) for _, legal in kept)
    return {
        "precision": precision,
        "selfplay_s": round(selfplay_s, 2),
        "evaluations": counted["positions"],
        "forwards": counted["calls"],
        "mean_batch": round(counted["positions"] / counted["calls"], 1),
        "evals_per_s": round(counted["positions"] / selfplay_s),
        "in_forward_share": round(counted["seconds"] / selfplay_s, 3),
        "ceiling_evals_per_s": round(replayed / replay_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--games", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    checkpoint = Checkpoint.load(args.checkpoint)
    rows: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for precision in PRECISIONS if r % 2 == 0 else PRECISIONS[::-1]:
            rows.append(one_round(checkpoint, precision, args.games, seed=r))
            print(json.dumps(rows[-1]), flush=True)
    for precision in PRECISIONS:
        mine = [row for row in rows if row["precision"] == precision]
        medians = {
            k: statistics.median(row[k] for row in mine) for k in ("evals_per_s", "ceiling_evals_per_s")
        }
        medians["share_of_ceiling"] = round(medians["evals_per_s"] / medians["ceiling_evals_per_s"], 3)
        print(json.dumps({"precision": precision, "median": medians}))


if __name__ == "__main__":
    main()
