"""A solver-labelled suite of Dots and Boxes positions, made on the spot, and a player's score on it.

Positions come from uniformly random play (on 4x4 from the strategy probes' mixed policy, since
random play's 4x4 endgames are mostly boxes to collect), an equal share at each count of drawn
lines in a range (`DRAWN`: 3 to 22 on 3x3), and each is labelled with every legal line's exact value for the
mover: by the retrograde table on boards it takes (`solver`: 3x3 boxes and smaller), and on 4x4
by the endgame search (`endgame`), so there the suite is of *endgame probes*, positions with at
most 24 lines left. Only positions where the choice of line matters are kept: some line is worth
less than the best. On 3x3 and 4x4 the suite also holds the strategy probes (`probes`), scored
per principle. The same seed makes the same suite, so no file travels with the code.

A player's move **keeps the value** when its line is worth the best (the best box difference
still to come), and **keeps the outcome** when the mover's lead plus its line's value has the
sign of the lead plus the best value (a won game stays won, a drawn one drawn).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

import numpy as np
import torch

from c4core.games.dots_and_boxes import DotsAndBoxes
from c4core.games.dots_and_boxes.endgame import EndgameSolver
from c4core.games.dots_and_boxes.probes import TAGS, Probe, make_probes, mixed_move
from c4core.games.dots_and_boxes.rules import DRAWN_LINE, DotsState
from c4core.games.players import Player

if TYPE_CHECKING:
    from c4core.games.dots_and_boxes.batch import DotsBoards

DRAWN = {(3, 3): (3, 22), (2, 3): (2, 14), (2, 2): (1, 9), (4, 4): (16, 34)}
"""The range of drawn lines a board's suite spreads over, by (rows, cols) of boxes."""
PROBES = {(3, 3): ((3, 22), 3000), (4, 4): ((16, 34), 600)}
"""The boards with strategy probes: the range of drawn lines they are looked for in, and the
most games of the mixed policy they are drawn from (`probes.make_probes`)."""
PROBES_PER_TAG = 150
"""The most strategy probes a principle (`probes.TAGS`)."""


@dataclass(frozen=True)
class DotsItem:
    """One suite position and its labels."""

    state: DotsState
    """The position."""
    values: tuple[int, ...]
    """Each line's exact value for the mover (`DotsSolver.action_values`); `DRAWN_LINE` on drawn lines."""

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
    solver = game.exact_solver()  # the table where it fits, else the endgame search
    searched = isinstance(solver, EndgameSolver)
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
                state = state.apply(
                    mixed_move(state, rng) if searched else int(rng.choice(state.legal_actions()))
                )
            name = (state.lines, state.margin(), state.current_player())
            if state.is_terminal or name in seen:
                continue
            values = solver.action_values(np.array([state.lines]))[0]
            legal = values[values > DRAWN_LINE]
            if legal.min() == legal.max():  # every line is as good: nothing to choose
                continue
            seen.add(name)
            items.append(DotsItem(state, tuple(int(v) for v in values)))
            found += 1
    return tuple(items)


@lru_cache(maxsize=2)
def make_probe_suite(game: DotsAndBoxes, seed: int = 0) -> tuple[Probe, ...]:
    """The strategy probes of `game`'s board (`PROBES`; none elsewhere), made from `seed`."""
    boxes = game.boxes
    if (boxes.rows, boxes.cols) not in PROBES:
        return ()
    drawn, games = PROBES[(boxes.rows, boxes.cols)]
    return make_probes(game, game.exact_solver().action_values, PROBES_PER_TAG, seed, drawn, games)


@dataclass(frozen=True)
class DotsScore:
    """A player's score on a suite."""

    counted: int
    keeps_value: float
    keeps_outcome: float
    probes: dict[str, float] = field(default_factory=dict)
    """Per principle (`probes.TAGS`), the share of its probes where the move keeps the value
    (NaN for a principle without probes)."""

    def metrics(self) -> dict[str, float]:
        return {
            "suite/counted": float(self.counted),
            "suite/keeps_value": self.keeps_value,
            "suite/keeps_outcome": self.keeps_outcome,
        } | {f"suite/probe/{tag}": rate for tag, rate in self.probes.items()}


def _moves(player: Player, game: DotsAndBoxes, states: Sequence[DotsState], chunk: int = 256) -> list[int]:
    """`player`'s one move in each position (greedy players are deterministic)."""
    generator, out = torch.Generator().manual_seed(0), []
    for start in range(0, len(states), chunk):
        out += player.act(game.batch_of(states[start : start + chunk]), generator).tolist()
    return out


def score_suite(
    player: Player, game: DotsAndBoxes, items: Sequence[DotsItem], probes: Sequence[Probe] = ()
) -> DotsScore:
    """`player`'s move in each position of the suite and of the strategy probes, scored."""
    actions = _moves(player, game, [it.state for it in items])
    value = sum(item.values[a] == item.best for item, a in zip(items, actions, strict=True))
    outcome = sum(item.keeps_outcome(a) for item, a in zip(items, actions, strict=True))
    kept: dict[str, list[bool]] = {}
    if probes:
        for probe, a in zip(probes, _moves(player, game, [p.state for p in probes]), strict=True):
            kept.setdefault(probe.tag, []).append(probe.keeps_value(a))
    per_tag = {t: float(np.mean(kept[t])) if t in kept else float("nan") for t in TAGS} if probes else {}
    n = max(len(items), 1)
    return DotsScore(len(items), value / n, outcome / n, per_tag)


class SeededSuite:
    """The suite of a board and seed as the game interface's `Suite` (`make_suite`)."""

    def __init__(self, game: DotsAndBoxes, seed: int = 0, positions: int = 1200):
        self.game = game
        self.name = f"{game.variant}, seed {seed}"
        self.items = make_suite(game, positions, seed)
        self.probes = make_probe_suite(game, seed)
        self.tags = {"suite/keeps_value": "suite_keeps_value", "suite/keeps_outcome": "suite_keeps_outcome"}
        if self.probes:
            self.tags |= {f"suite/probe/{tag}": f"probe_{tag}" for tag in TAGS}
        self.tags["suite/counted"] = "suite_counted"  # last: its tag marks the scoring done

    def score(self, player: Player) -> dict[str, float]:
        return score_suite(player, self.game, self.items, self.probes).metrics()

    def holds(self, states: DotsBoards) -> torch.Tensor:
        """`Suite.holds`: by the set of drawn lines, the positions and strategy probes and their
        images under the board's symmetries (what is left of a game depends on its lines alone)."""
        return torch.from_numpy(np.isin(states.lines.cpu().numpy(), self._line_sets))

    @cached_property
    def _line_sets(self) -> np.ndarray:
        held = set()
        for state in [item.state for item in self.items] + [probe.state for probe in self.probes]:
            drawn = [a for a in range(self.game.num_actions) if state.lines >> a & 1]
            held |= {sum(1 << s.actions[a] for a in drawn) for s in self.game.symmetries}
        return np.array(sorted(held), np.int64)
