"""Learner ablations: how fast PPO variants beat the tactical bot, per iteration and per second.

Trains a fresh net against `tactical`, `random` and itself, and every `--every` iterations plays
400 greedy games against `tactical` (4 random opening plies, colours alternated). Run variants
side by side, one torch thread each, so they share the machine equally:

    python benchmarks/bench_learner.py '{"mirror": false}' &
    python benchmarks/bench_learner.py '{"mirror": true}' &

The JSON overrides `PPOConfig` fields; a "net" key overrides `NetConfig` fields, "seed" the seed.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from c4core.config import NetConfig, PPOConfig
from c4core.evaluation.match import play_match
from c4core.games.connect4.bots import TacticalBot
from c4core.games.players import RandomBot
from c4core.learners.net import NetPlayer, PolicyValueNet
from c4core.learners.ppo import train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("overrides", nargs="?", default="{}", help="JSON of PPOConfig overrides")
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--games", type=int, default=768)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    overrides = json.loads(args.overrides)
    net_kw = overrides.pop("net", {})
    seed = overrides.pop("seed", 0)
    torch.set_num_threads(args.threads)
    torch.manual_seed(seed)
    net = PolicyValueNet(NetConfig(**net_kw))
    config = PPOConfig(iterations=args.iterations, games=args.games, **overrides)
    start = time.perf_counter()
    print(f"# {args.overrides}")
    print("iteration  seconds  greedy_win_vs_tactical  entropy  approx_kl", flush=True)

    def on_iteration(i: int, m: dict[str, float]) -> None:
        if (i + 1) % args.every == 0:
            r = play_match(NetPlayer(net, "net"), TacticalBot(), 400, seed=123)
            print(
                f"{i + 1:9d}  {time.perf_counter() - start:7.0f}  {r.total.win / 400:22.3f}  "
                f"{m['losses/entropy']:7.2f}  {m['losses/approx_kl']:9.3f}",
                flush=True,
            )

    train(net, config, [TacticalBot(), RandomBot(), None], seed=seed + 1, on_iteration=on_iteration)


if __name__ == "__main__":
    main()
