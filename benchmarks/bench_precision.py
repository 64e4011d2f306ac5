"""The net's trunk in float32 against bfloat16 (`NetConfig.precision`), on one torch thread.

    python benchmarks/bench_precision.py /tmp/abl/base

Two parts, each setting run twice, interleaved:
- a forward pass and a training step (forward, backward, Adam) of the `cpu` net at batch sizes
  from a search batch to a PPO minibatch, median milliseconds of 12 after a warm-up;
- whole PPO iterations of the `cpu` recipe on one rank, from gen6 of a finished `cpu`-recipe
  league folder (a `LocalStore`, e.g. the ablation's base; `bench_ranks.py` does the same on
  one rank and two), median seconds of collection and of update over iterations 2-5.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace

import torch

from c4core.config import PRECISIONS, PROFILES
from c4core.games.connect4.rules import NUM_PLANES
from c4core.learners.net import PolicyValueNet
from c4core.learners.ranks import ALONE

BATCHES = (64, 256, 1024)


def _median_ms(f: Callable[[], None], reps: int = 12) -> float:
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 2)


def kernels(precision: str) -> dict[str, float]:
    """Forward and training-step milliseconds per batch size, the trunk in `precision`."""
    torch.manual_seed(0)
    net = PolicyValueNet(replace(PROFILES["cpu"].net, precision=precision))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    out = {}
    for n in BATCHES:
        planes = (torch.rand(n, NUM_PLANES, 6, 7) > 0.5).float()
        legal = torch.ones(n, 7, dtype=torch.bool)

        def forward(planes: torch.Tensor = planes, legal: torch.Tensor = legal) -> None:
            with torch.no_grad():
                net(planes, legal)

        def step(planes: torch.Tensor = planes, legal: torch.Tensor = legal) -> None:
            optimizer.zero_grad()
            logits, value = net(planes, legal)
            (torch.log_softmax(logits, 1)[:, 0].mean() + value.pow(2).mean()).backward()
            optimizer.step()

        out[f"forward_{n}_ms"] = _median_ms(forward)
        out[f"step_{n}_ms"] = _median_ms(step)
    return out


def iterations(base: str, precision: str) -> dict[str, float]:
    from bench_ranks import _iterations

    rows = _iterations(base, ALONE, precision)
    return {
        "collect_s": round(statistics.median(c for c, _ in rows), 2),
        "update_s": round(statistics.median(u for _, u in rows), 2),
    }


if __name__ == "__main__":
    torch.set_num_threads(1)
    results = []
    for _ in range(2):
        for precision in PRECISIONS:
            row = {"precision": precision, **kernels(precision), **iterations(sys.argv[1], precision)}
            results.append(row)
            print(json.dumps(results[-1]), flush=True)
