"""Every position of a small game, enumerated through the game interface: a perfect hash.

`position_index` walks a game breadth first from the start and keeps every reachable position
that is not over, sorted by key (`State.key`), so a key's rank among them is a perfect hash. A
table of action values (`c4core.learners.tabular`) has one row per position, and exact
exploitability (`c4core.evaluation.exploitability`) sweeps them backwards from the ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from c4core.games.base import Game, State

MAX_POSITIONS = 1_000_000
"""The most positions a game may have for a table: enumerating them runs in Python."""


@dataclass(frozen=True, eq=False)
class PositionIndex:
    """Every reachable position of a game that is not over, by key: row `i` of a table is the
    position whose key is ``keys[i]``."""

    game: Game
    keys: np.ndarray
    """Sorted int64 keys (`State.key`)."""
    states: tuple[State, ...]
    """The position of each key, in the same order."""

    def __len__(self) -> int:
        return len(self.keys)

    def rows(self, keys: torch.Tensor | np.ndarray) -> np.ndarray:
        """The table row of each key; `ValueError` for a key of no position in play."""
        keys = np.asarray(keys.cpu() if isinstance(keys, torch.Tensor) else keys, dtype=np.int64)
        rows = np.searchsorted(self.keys, keys).clip(max=len(self.keys) - 1)
        if not np.array_equal(self.keys[rows], keys):
            raise ValueError(f"a position is not in {self.game.title}'s table (finished, or unreachable)")
        return rows


@lru_cache(maxsize=4)
def position_index(game: Game) -> PositionIndex:
    """Enumerate `game`'s positions in play, breadth first from the start (cached per game);
    `ValueError` once there are more than `MAX_POSITIONS`."""
    seen = {}
    frontier = [game.new_state()]
    while frontier:
        following = []
        for state in frontier:
            key = state.key()
            if key in seen or state.is_terminal:
                continue
            seen[key] = state
            if len(seen) > MAX_POSITIONS:
                raise ValueError(f"{game.title} has over {MAX_POSITIONS:,} positions: too many for a table")
            following.extend(state.apply(a) for a in state.legal_actions())
        frontier = following
    keys = sorted(seen)
    return PositionIndex(game, np.array(keys, dtype=np.int64), tuple(seen[k] for k in keys))
