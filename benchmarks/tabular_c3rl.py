"""C3RL's Connect-3 experiment, reproduced: tabular Q-learning and SARSA by self-play on a 4x4
board, 100,000 games each, then scored against `random`, a take-a-win-else-block bot, `perfect`
and each other, split by seat, over several seeds; and what C3RL lacked, each table's exact
NashConv every 10,000 games.

    python benchmarks/tabular_c3rl.py [--seeds 5] [--games 1000] [--out results.json]

One torch thread, one process. Prints a JSON document and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch

from c4core.config import TabularConfig
from c4core.evaluation.exploitability import nash_conv, policy_of
from c4core.evaluation.match import WDL, play_match
from c4core.games import load
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.solver import PerfectBot
from c4core.games.players import Player, RandomBot, sample_actions
from c4core.learners.tabular import QTable, TablePlayer, train_table

GAME = load("connect3-4x4")


class WinElseBlock(Player):
    """C3RL's heuristic: take a win, else block the opponent's, else a uniformly random move
    (`tactical` also prefers the centre)."""

    name = "win-else-block"

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        legal = boards.legal()
        mine, theirs = boards.threats()
        wins = boards.column_bits(mine) & legal
        blocks = boards.column_bits(theirs) & legal
        weights = torch.where(blocks.any(1, keepdim=True), blocks, legal)
        weights = torch.where(wins.any(1, keepdim=True), wins, weights)
        return sample_actions(weights.long(), generator)


def train(method: str, seed: int, games: int, every: int) -> tuple[QTable, list[dict[str, float]], float]:
    """A table after `games` self-play games, its NashConv every `every` games, and the seconds
    the training itself took (the NashConv evaluations excluded)."""
    config = TabularConfig(iterations=games // every, games=every, schedule_games=games)
    table = QTable(GAME)
    curve: list[dict[str, float]] = []
    spent = 0.0

    def record(i: int, metrics: dict[str, float]) -> None:
        nonlocal spent
        start = time.perf_counter()
        result = nash_conv(GAME, policy_of(TablePlayer(table), GAME))
        curve.append({"games": (i + 1) * every, "nash_conv": result.value, "visited": metrics["visited"]})
        spent += time.perf_counter() - start

    start = time.perf_counter()
    train_table(table, config, method, seed, 0, record)
    return table, curve, time.perf_counter() - start - spent


def score(wdl: WDL) -> tuple[float, float]:
    """The score (a draw counts half) and its 95% interval's half-width, from the per-game
    variance of 1 / 0.5 / 0, so draws narrow it."""
    n = wdl.games
    mean = (wdl.win + wdl.draw / 2) / n
    var = (wdl.win * (1 - mean) ** 2 + wdl.draw * (0.5 - mean) ** 2 + wdl.loss * mean**2) / max(n - 1, 1)
    return mean, 1.96 * math.sqrt(var / n)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--train-games", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    parser.add_argument("--games", type=int, default=1000, help="games per pairing, half from each seat")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    methods = ("q-learning", "sarsa")
    out: dict = {"train": {}, "matches": {}}
    tables: dict[tuple[str, int], QTable] = {}
    for method in methods:
        for seed in range(args.seeds):
            table, curve, seconds = train(method, seed, args.train_games, args.every)
            tables[method, seed] = table
            out["train"][f"{method}/{seed}"] = {"seconds": seconds, "curve": curve}
            print(f"{method} seed {seed}: {seconds:.1f} s, NashConv {curve[-1]['nash_conv']}", flush=True)
    opponents = {
        "random": RandomBot(),
        "win-else-block": WinElseBlock(),
        "perfect": PerfectBot(GAME.geometry),
    }
    for method in methods:
        other = methods[1 - methods.index(method)]
        for seed in range(args.seeds):
            me = TablePlayer(tables[method, seed], name=method)
            rivals = dict(opponents, **{other: TablePlayer(tables[other, seed], name=other)})
            for name, rival in rivals.items():
                result = play_match(me, rival, args.games, seed=seed, opening_plies=0, game=GAME)
                out["matches"][f"{method}/{seed}/{name}"] = {
                    "first": result.a_first.__dict__,
                    "second": result.b_first.__dict__,
                }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    _summary(out, methods, [*opponents, *methods], args.seeds, args.train_games)


def _summary(out: dict, methods: tuple[str, ...], rivals: list[str], seeds: int, games: int) -> None:
    print("\n| learner | opponent | score (95% CI) | first seat | second seat | per seed (min-max) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for method in methods:
        for rival in rivals:
            if rival == method:
                continue
            rows = [out["matches"][f"{method}/{s}/{rival}"] for s in range(seeds)]
            seat = {k: sum((WDL(**r[k]) for r in rows), WDL(0, 0, 0)) for k in ("first", "second")}
            total = seat["first"] + seat["second"]
            mean, half = score(total)
            per_seed = [score(WDL(**r["first"]) + WDL(**r["second"]))[0] for r in rows]
            f, s = score(seat["first"])[0], score(seat["second"])[0]
            print(
                f"| {method} | {rival} | {mean:.3f} ± {half:.3f} | {f:.3f} | {s:.3f} | "
                f"{min(per_seed):.3f}-{max(per_seed):.3f} |"
            )
    print("\n| learner | games | NashConv, mean over seeds (min-max) | rows visited |")
    print("| --- | --- | --- | --- |")
    for method in methods:
        curves = [out["train"][f"{method}/{s}"]["curve"] for s in range(seeds)]
        for i, point in enumerate(curves[0]):
            values = [c[i]["nash_conv"] for c in curves]
            visited = np.mean([c[i]["visited"] for c in curves])
            spread = f"{min(values):.0f}-{max(values):.0f}"
            print(f"| {method} | {point['games']:,} | {np.mean(values):.2f} ({spread}) | {visited:.3f} |")
    for method in methods:
        secs = [out["train"][f"{method}/{s}"]["seconds"] for s in range(seeds)]
        print(
            f"{method}: {games:,} games in {np.median(secs):.1f} s median ({min(secs):.1f}-{max(secs):.1f})"
        )


if __name__ == "__main__":
    main()
