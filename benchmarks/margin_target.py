"""The value target on Dots and Boxes 3x3 (issue #27): leagues that differ only in
`NetConfig.value_target` (the outcome, or the box margin), each snapshot scored against the
issue's 3x3 targets with 256 simulations of search.

    # the leagues, one after another on an otherwise idle machine, each in a store of its own
    c4 league --profile cpu --game dots-and-boxes-3x3 --name d3o --tracking-uri sqlite:////tmp/d3o/m.db
    c4 league --profile cpu --game dots-and-boxes-3x3 --value-target margin --name d3m \\
        --tracking-uri sqlite:////tmp/d3m/m.db
    # then every arm's snapshots, --jobs at a time
    python benchmarks/margin_target.py outcome=sqlite:////tmp/d3o/m.db margin=sqlite:////tmp/d3m/m.db \\
        --versions 6 7 --jobs 2

For each arm and version it prints one Markdown row: the suite's keeps-value and keeps-outcome
(the 1,200 solver-labelled positions, seed 0, as the league scores them) and the strategy
probes with 256 simulations, and the snapshot's wins as second player in `--games` games
against `perfect` from the empty board (half of them as second player; a first player cannot win
3x3 against it); then a second table, keeps-value with search by the lines drawn in the suite's
positions, four at a time. Raw scores are the version tags the league wrote.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import torch

from c4core.games import BatchState, State
from c4core.games.players import Player

GAME = "dots-and-boxes-3x3"
MODEL = GAME


class Recording(Player):
    """A player that remembers its move in every position it is asked about, so the suite's
    one search of each position also gives the breakdown by lines drawn."""

    def __init__(self, player: Player):
        self.player, self.name = player, player.name
        self.moves: dict[State, int] = {}

    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        out = self.player.act(boards, generator)
        for i, move in enumerate(out.tolist()):
            self.moves[boards.state(i)] = move
        return out


def score_player(net: Player, simulations: int, games: int) -> dict[str, Any]:
    """A 3x3 network player's suite scores with `simulations` of search, keeps-value by lines
    drawn, and its wins as second player in `games` games against `perfect` (half of them)."""
    from c4core.evaluation.match import play_match
    from c4core.games import load
    from c4core.learners.search import SearchPlayer
    from c4core.players import make_player

    game = load(GAME)
    searched = SearchPlayer.around(net, simulations)
    suite = game.suite(seed=0)
    assert suite is not None
    recorded = Recording(searched)
    scores = suite.score(recorded)
    # where the misses are: keeps-value by lines drawn, four at a time (the moves scored above)
    kept: dict[int, list[bool]] = {}
    for item in suite.items:
        move = recorded.moves[item.state]
        kept.setdefault(item.state.ply // 4 * 4, []).append(bool(item.values[move] == item.best))
    by_lines = {f"{k}-{k + 3}": (len(v), round(sum(v) / len(v), 3)) for k, v in sorted(kept.items())}
    perfect = make_player("perfect", game)
    result = play_match(perfect, searched, games, seed=0, opening_plies=0, game=game)
    # `perfect` is A: its games as first player are the snapshot's as second
    second = result.a_first
    return {
        **scores,
        "second_wins": second.loss,
        "second_games": second.games,
        "first_wins": result.b_first.loss,  # A's losses where B moved first
        "by_lines": by_lines,
    }


def score(arm: str, uri: str, version: int, simulations: int, games: int) -> dict[str, Any]:
    """One registered snapshot's `score_player`."""
    torch.set_num_threads(1)
    from c4core.entry import registry_fetch
    from c4core.games import load
    from c4core.players import make_player

    net = make_player(f"models:/{MODEL}/{version}", load(GAME), registry=registry_fetch(uri))
    return {
        "arm": arm,
        "version": version,
        "value_target": net.net.config.value_target,
        **score_player(net, simulations, games),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arms", nargs="+", help="NAME=TRACKING_URI, one store per league")
    parser.add_argument("--versions", type=int, nargs="+", required=True)
    parser.add_argument("--simulations", type=int, default=256)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="also write every row to this file")
    args = parser.parse_args()
    arms = [a.split("=", 1) for a in args.arms]
    work = [(arm, uri, v, args.simulations, args.games) for arm, uri in arms for v in args.versions]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(score, *zip(*work, strict=True)))
    keys = ["suite/keeps_value", "suite/keeps_outcome"]
    probes = sorted(k for k in rows[0] if k.startswith("suite/probe/"))
    print(
        "| arm | snapshot | value target | keeps value | keeps outcome | "
        + " | ".join(p.split("/")[-1].replace("_", " ") for p in probes)
        + f" | wins as second player against perfect (of {rows[0]['second_games']}) |"
    )
    print("| --- " * (6 + len(probes)) + "|")
    for r in rows:
        cells = [f"{r[k]:.3f}" for k in keys + probes]
        print(
            f"| {r['arm']} | gen{r['version']} | {r['value_target']} | "
            + " | ".join(cells)
            + f" | {r['second_wins']} |"
        )
    buckets = list(rows[0]["by_lines"])
    print(
        "\n| arm | snapshot | "
        + " | ".join(f"{b} lines ({rows[0]['by_lines'][b][0]})" for b in buckets)
        + " |"
    )
    print("| --- " * (2 + len(buckets)) + "|")
    for r in rows:
        cells = [f"{r['by_lines'][b][1]:.3f}" for b in buckets]
        print(f"| {r['arm']} | gen{r['version']} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
