"""A solver-labelled suite of Dots and Boxes positions, made on the spot, and a player's score on it.

Positions come from uniformly random play on a board the exact solver takes
(`c4core.games.dots_and_boxes.solver`: 3x3 boxes and smaller), an equal share at each count of drawn
lines in a range (3 to 22 on 3x3), and each is labelled with every legal line's exact value for the
mover. Only positions where the choice of line matters are kept: some line is worth less than the
best. The same seed makes the same suite, so no file travels with the code.

A player's move **keeps the value** when its line is worth the best (the best box difference
still to come), and **keeps the outcome** when the mover's lead plus its line's value has the
sign of the lead plus the best value (a won game stays won, a drawn one drawn).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from c4core.games.dots_and_boxes import DotsAndBoxes
from c4core.games.dots_and_boxes.rules import DotsState
from c4core.games.dots_and_boxes.solver import DotsSolver
from c4core.games.players import Player

DRAWN = {(3, 3): (3, 22), (2, 3): (2, 14), (2, 2): (1, 9)}
"""The range of drawn lines a board's suite spreads over, by (rows, cols) of boxes."""


@dataclass(frozen=True)
class DotsItem:
    """One suite position and its labels."""

    state: DotsState
    """The position."""
    values: tuple[int, ...]
    """Each line's exact value for the mover (`DotsSolver.action_values`); very negative on drawn lines."""

    @property
    def best(self) -> int:
        return max(self.values)

    def keeps_outcome(self, action: int) -> bool:
        lead = self.state.margin() if self.state.current_player() == 0 else -self.state.margin()
        return bool(np.sign(lead + self.values[action]) == np.sign(lead + self.best))


@lru_cache(maxsize=2)
def make_suite(game: DotsAndBoxes, positions: int = 1200, seed: int = 0) -> tuple[DotsItem, ...]:
    """`positions` positions of `game` whose choice of line matters, an equal share at each
    count of drawn lines in `DRAWN` (the remainder to the fewest), labelled by the solver; fewer
    where a count has fewer distinct such positions than its share (on small boards)."""
    boxes = game.boxes
    if (boxes.rows, boxes.cols) not in DRAWN:
        boards = ", ".join(f"{r}x{c}" for r, c in DRAWN)
        raise ValueError(f"no suite for {game.title}: suites are made on {boards} boxes")
    solver = DotsSolver(boxes)
    lo, hi = DRAWN[(boxes.rows, boxes.cols)]
    depths = list(range(lo, hi + 1))
    quota = {d: positions // len(depths) + (i < positions % len(depths)) for i, d in enumerate(depths)}
    rng = np.random.default_rng(seed)
    items: list[DotsItem] = []
    seen: set[tuple[int, int, int]] = set()
    for depth in depths:
        found = 0
        for _ in range(50 * quota[depth]):  # a small board may have fewer such positions
            if found == quota[depth]:
                break
            state = DotsState(boxes)
            for _ in range(depth):
                state = state.apply(int(rng.choice(state.legal_actions())))
            name = (state.lines, state.margin(), state.current_player())
            if state.is_terminal or name in seen:
                continue
            values = solver.action_values(np.array([state.lines]))[0]
            legal = values[values > -(1 << 20)]
            if legal.min() == legal.max():  # every line is as good: nothing to choose
                continue
            seen.add(name)
            items.append(DotsItem(state, tuple(int(v) for v in values)))
            found += 1
    return tuple(items)


@dataclass(frozen=True)
class DotsScore:
    """A player's score on a suite."""

    counted: int
    keeps_value: float
    keeps_outcome: float

    def metrics(self) -> dict[str, float]:
        return {
            "suite/counted": float(self.counted),
            "suite/keeps_value": self.keeps_value,
            "suite/keeps_outcome": self.keeps_outcome,
        }


def score_suite(player: Player, game: DotsAndBoxes, items: Sequence[DotsItem], chunk: int = 256) -> DotsScore:
    """`player`'s one move in each position (greedy players are deterministic), scored."""
    generator = torch.Generator().manual_seed(0)
    value = outcome = 0
    for start in range(0, len(items), chunk):
        part = items[start : start + chunk]
        actions = player.act(game.batch_of([it.state for it in part]), generator).tolist()
        for item, action in zip(part, actions, strict=True):
            value += item.values[action] == item.best
            outcome += item.keeps_outcome(action)
    n = max(len(items), 1)
    return DotsScore(len(items), value / n, outcome / n)


class SeededSuite:
    """The suite of a board and seed as the game interface's `Suite` (`make_suite`)."""

    tags = {
        "suite/keeps_value": "suite_keeps_value",
        "suite/keeps_outcome": "suite_keeps_outcome",
        "suite/counted": "suite_counted",
    }

    def __init__(self, game: DotsAndBoxes, seed: int = 0, positions: int = 1200):
        self.game = game
        self.name = f"{game.variant}, seed {seed}"
        self.items = make_suite(game, positions, seed)

    def score(self, player: Player) -> dict[str, float]:
        return score_suite(player, self.game, self.items).metrics()
