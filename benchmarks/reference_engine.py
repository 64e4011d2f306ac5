"""A stand-in for the reference tutorial's engine, to measure ours against it side by side.

The tutorial steps games as float tensors and finds wins with a 2D convolution. This script
re-creates that design (our own code, not theirs): boards are float [n, 2, 6, 7] tensors, a move
writes a 1.0 at the column's lowest empty row, and four 4-cell kernels (row, column, both
diagonals) convolved over the mover's plane find a win wherever a response equals 4.

Usage: python benchmarks/reference_engine.py [--games 20000] [--batch 2048]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.nn import functional as F

ROWS, COLS = 6, 7


def win_kernels() -> torch.Tensor:
    k = torch.zeros(4, 1, 4, 4)
    k[0, 0, 0, :] = 1  # row
    k[1, 0, :, 0] = 1  # column
    k[2, 0, range(4), range(4)] = 1  # diagonal
    k[3, 0, range(4), [3, 2, 1, 0]] = 1  # anti-diagonal
    return k


def play_random_games(n: int, gen: torch.Generator) -> torch.Tensor:
    """Random vs random; returns +1/-1/0 per game from the first player's side."""
    board = torch.zeros(n, 2, ROWS, COLS)
    heights = torch.zeros(n, COLS, dtype=torch.long)
    result = torch.zeros(n)
    done = torch.zeros(n, dtype=torch.bool)
    kernels = win_kernels()
    rows = torch.arange(n)
    for ply in range(ROWS * COLS):
        player = ply % 2
        legal = (heights < ROWS) & ~done[:, None]
        weights = legal.float() + (~legal.any(1, keepdim=True)).float()
        cols = torch.multinomial(weights, 1, generator=gen).squeeze(1)
        active = legal[rows, cols]
        r = ROWS - 1 - heights[rows, cols]
        board[rows[active], player, r[active], cols[active]] = 1.0
        heights[rows[active], cols[active]] += 1
        response = F.conv2d(board[:, player : player + 1], kernels)
        won = (response.flatten(1) >= 4).any(1) & active
        result[won] = 1.0 if player == 0 else -1.0
        done |= won
        if bool(done.all()):
            break
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--games", type=int, default=20000)
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    gen = torch.Generator().manual_seed(0)
    rates = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for lo in range(0, args.games, args.batch):
            play_random_games(min(args.batch, args.games - lo), gen)
        rates.append(args.games / (time.perf_counter() - start))
    rates.sort()
    print(
        f"reference-style float/conv2d engine: {rates[len(rates) // 2]:,.0f} random games/s "
        f"(median of {args.repeats})"
    )


if __name__ == "__main__":
    main()
