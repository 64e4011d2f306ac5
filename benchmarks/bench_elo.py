"""Benchmark ``c4core.evaluation.elo.fit_elo`` on a simulated league with known ratings.

Simulates ``--players`` players (one of them the anchor ``"random"`` at true rating 0)
and ``--pairings`` match records between random pairs with ``--min-games`` to
``--max-games`` games each, times :func:`fit_elo` (aggregation, fit and intervals) over
``--repeats`` runs, and reports the median time together with the recovery error
against the true ratings and the mean 95% CI half-width.

Run from the repository root::

    python benchmarks/bench_elo.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    from c4core.evaluation.elo import ELO_SCALE, fit_elo
except ModuleNotFoundError:
    # Lets the script run from a plain checkout without installing the package.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from c4core.evaluation.elo import ELO_SCALE, fit_elo

ANCHOR = "random"


def simulate(
    players: int,
    pairings: int,
    min_games: int,
    max_games: int,
    draw_rate: float,
    rating_sd: float,
    seed: int,
) -> tuple[list[dict[str, object]], dict[str, float]]:
    """Return (match records, true ratings relative to the anchor)."""
    rng = np.random.default_rng(seed)
    names = [ANCHOR] + [f"p{k:03d}" for k in range(1, players)]
    true = rng.normal(0.0, rating_sd, size=players)
    true -= true[0]
    # Random distinct pairs; a chain over all players guarantees a connected graph.
    a = rng.integers(0, players, size=pairings)
    b = (a + rng.integers(1, players, size=pairings)) % players
    a[: players - 1] = np.arange(players - 1)
    b[: players - 1] = np.arange(1, players)
    games = rng.integers(min_games, max_games + 1, size=pairings)
    p_win = 1.0 / (1.0 + 10.0 ** (-(true[a] - true[b]) / ELO_SCALE))
    # Each draw replaces half a win and half a loss, so the expected score of A stays
    # exactly p_win as the model assumes; lopsided pairings therefore draw less often.
    p_draw = draw_rate * 2.0 * np.minimum(p_win, 1.0 - p_win)
    probs = np.stack([p_win - p_draw / 2, p_draw, 1.0 - p_win - p_draw / 2], axis=1)
    counts = np.array([rng.multinomial(n, pr) for n, pr in zip(games, probs, strict=True)])
    records = [
        {"a": names[x], "b": names[y], "win": int(w), "draw": int(d), "loss": int(loss)}
        for x, y, (w, d, loss) in zip(a, b, counts, strict=True)
    ]
    return records, dict(zip(names, true.tolist(), strict=True))


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the benchmark and print the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=200)
    parser.add_argument("--pairings", type=int, default=20_000)
    parser.add_argument("--min-games", type=int, default=20)
    parser.add_argument("--max-games", type=int, default=100)
    parser.add_argument("--draw-rate", type=float, default=0.2)
    parser.add_argument("--rating-sd", type=float, default=200.0)
    parser.add_argument("--virtual-draws", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args(argv)

    records, true = simulate(
        args.players,
        args.pairings,
        args.min_games,
        args.max_games,
        args.draw_rate,
        args.rating_sd,
        args.seed,
    )
    total_games = sum(r["win"] + r["draw"] + r["loss"] for r in records)

    times = []
    fit = None
    for _ in range(args.repeats):
        start = time.perf_counter()
        fit = fit_elo(records, anchor=ANCHOR, virtual_draws=args.virtual_draws)
        times.append(time.perf_counter() - start)
    assert fit is not None

    names = sorted(true)
    err = np.array([fit.ratings[name] - true[name] for name in names])
    half = np.array([(fit.ci95[n][1] - fit.ci95[n][0]) / 2 for n in names if n != ANCHOR])
    covered = sum(fit.ci95[n][0] <= true[n] <= fit.ci95[n][1] for n in names if n != ANCHOR)

    print(
        f"players={args.players} pairings={args.pairings} games={total_games} "
        f"rating_sd={args.rating_sd} virtual_draws={args.virtual_draws} "
        f"repeats={args.repeats} seed={args.seed}"
    )
    print(f"fit_elo median time : {statistics.median(times):.4f} s (min {min(times):.4f} s)")
    print(f"max |error|         : {np.max(np.abs(err)):.2f} Elo")
    print(f"RMS error           : {np.sqrt(np.mean(err**2)):.2f} Elo")
    print(f"mean CI half-width  : {half.mean():.2f} Elo")
    print(f"CI coverage of truth: {covered}/{len(half)} ({covered / len(half):.1%})")


if __name__ == "__main__":
    main()
