"""The PPO learning test's figures on this CPU: the sampling policy's score against `random`
before and after training, and the gain the test requires (four standard errors).

Run it under oneDNN's instruction caps to see how other kinds of CPU would train the same seed:

    for isa in "" AVX512_CORE AVX2; do ONEDNN_MAX_CPU_ISA=$isa python benchmarks/bench_learning_test.py; done
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_ppo import SEED, TINY, standard_error  # noqa: E402  (the test's own settings)

from c4core.config import PPOConfig  # noqa: E402
from c4core.evaluation.match import play_match  # noqa: E402
from c4core.games.players import RandomBot  # noqa: E402
from c4core.learners.net import NetPlayer, PolicyValueNet  # noqa: E402
from c4core.learners.ppo import train  # noqa: E402


def main() -> None:
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or "none"
    for precision in ("float32", "bfloat16"):
        torch.manual_seed(SEED)
        net = PolicyValueNet(replace(TINY, precision=precision))
        before = play_match(NetPlayer(net, greedy=False), RandomBot(), 1000, seed=99).total
        train(net, PPOConfig(iterations=25, games=128), [RandomBot()], seed=SEED)
        after = play_match(NetPlayer(net, greedy=False), RandomBot(), 1000, seed=99).total
        margin = 4 * math.hypot(standard_error(before), standard_error(after))
        scores = f"before {before.score:.4f} after {after.score:.4f} required gain {margin:.4f}"
        print(f"{cap} {precision}: {scores}")


if __name__ == "__main__":
    main()
