"""Search speed: the dev suite at N simulations, and search against the raw net over a match.

1. Scores a network with and without search on ``../shared/suite/dev.jsonl`` (all counted
   positions in one batch, one tree each) and reports the wall time and the suite metrics.
2. Plays the head-to-head harness: ``<net>+mcts<N>`` against the same net played greedily,
   colours alternated in pairs that share a random opening (`c4core.evaluation.match.play_match`).

A 2x32 net with random weights is enough for timing; pass a trained checkpoint to see strength.
Usage: python benchmarks/bench_search.py [--checkpoint runs/default/gen6.pt] [--simulations 256]
       [--games 40] [--match-simulations 64] [--threads 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from c4core.config import NetConfig, SearchConfig
from c4core.evaluation.match import MatchResult, play_match
from c4core.games.connect4.suite import default_suite_path, evaluate_suite, load_suite
from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet
from c4core.learners.search import SearchPlayer


def load_net(checkpoint: str | None, seed: int = 0) -> tuple[PolicyValueNet, str]:
    """The checkpoint's net, or a 2x32 net with random weights (named ``random2x32``)."""
    if checkpoint:
        return Checkpoint.load(checkpoint).build(), Path(checkpoint).stem
    torch.manual_seed(seed)
    return PolicyValueNet(NetConfig(blocks=2, channels=32)).eval(), "random2x32"


def head_to_head(
    net: PolicyValueNet, simulations: int, games: int, seed: int = 0, name: str = "net"
) -> MatchResult:
    """``name+mcts<simulations>`` against ``name`` played greedily, from the searcher's side."""
    searcher = SearchPlayer(net, simulations, SearchConfig(), net_name=name)
    return play_match(searcher, NetPlayer(net, name=name), games, seed=seed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", help="a trained checkpoint (default: a random-weight 2x32 net)")
    p.add_argument("--suite", help="suite JSONL (default: ../shared/suite/dev.jsonl)")
    p.add_argument("--simulations", type=int, default=256, help="simulations for the suite (default 256)")
    p.add_argument("--games", type=int, default=40, help="head-to-head games, even (default 40)")
    p.add_argument("--match-simulations", type=int, default=64, help="simulations in the match (default 64)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as c4 eval-suite)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    net, name = load_net(args.checkpoint)
    suite_path = args.suite or default_suite_path()
    cfg = net.config
    print(f"net {name} ({cfg.blocks}x{cfg.channels}), torch threads {torch.get_num_threads()}")

    if suite_path is None:
        print("no suite found: skipping the suite benchmark (pass --suite)")
    else:
        suite = load_suite(suite_path)
        print(f"suite {suite_path}: {len(suite)} positions, {sum(p.counted for p in suite)} counted")
        print(f"{'player':<22}{'seconds':>9}{'keeps result':>15}{'best move':>12}")
        for player in (NetPlayer(net, name=name), SearchPlayer(net, args.simulations, net_name=name)):
            start = time.perf_counter()
            report = evaluate_suite(player, suite)
            seconds = time.perf_counter() - start
            t = report.total
            print(f"{player.name:<22}{seconds:>9.1f}{t.keeps_rate:>15.1%}{t.best_rate:>12.1%}")

    start = time.perf_counter()
    result = head_to_head(net, args.match_simulations, args.games, name=name)
    seconds = time.perf_counter() - start
    t = result.total
    print(
        f"{result.a} vs {result.b}: {t.games} games in {seconds:.1f}s "
        f"({seconds / t.games:.2f} s/game): W {t.win} D {t.draw} L {t.loss}, score {t.score:.3f}"
    )


if __name__ == "__main__":
    main()
