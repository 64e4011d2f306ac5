"""Connect Four on any board (rows, columns, connect-k) behind the game interface.

The rules live in `c4core.games.connect4.rules` (the bitboard layout and the scalar `Position`) and
`c4core.games.connect4.batch` (the tensor engine `Boards`); both answer the interface's calls directly. An
action is a column, 0-based; the move notation is the solver's, a column digit counted from 1,
and a move string is digits run together (``"4453"``). The one symmetry is the left-right mirror.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from c4core.games.base import Symmetry
from c4core.games.connect4.rules import NUM_PLANES, STANDARD, Geometry, Position, parse_column

if TYPE_CHECKING:
    import numpy as np
    import torch

    from c4core.games.connect4.batch import Boards
    from c4core.games.connect4.solver import Solver
    from c4core.games.connect4.suite import FileSuite
    from c4core.games.connect4.tree import ConnectFourTree
    from c4core.games.players import Player


@dataclass(frozen=True)
class ConnectFour:
    """Connect Four (`Game`): `geometry` sets rows, columns and the run length that wins."""

    geometry: Geometry = field(default=STANDARD)
    """Board size and win length; the default is the standard 6x7, four in a row."""

    name = "connect4"

    @classmethod
    def from_params(cls, rows: int = 6, cols: int = 7, connect: int = 4) -> ConnectFour:
        return cls(Geometry(rows=rows, cols=cols, connect=connect))

    @property
    def params(self) -> Mapping[str, int]:
        g = self.geometry
        return {"rows": g.rows, "cols": g.cols, "connect": g.connect}

    @property
    def variant(self) -> str:
        g = self.geometry
        return "connect4" if g == STANDARD else f"connect{g.connect}-{g.rows}x{g.cols}"

    @property
    def title(self) -> str:
        g = self.geometry
        return "Connect Four" if g == STANDARD else f"Connect-{g.connect} on {g.rows}x{g.cols}"

    @property
    def num_actions(self) -> int:
        return self.geometry.cols

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        return (NUM_PLANES, self.geometry.rows, self.geometry.cols)

    @property
    def max_game_length(self) -> int:
        return self.geometry.cells

    @cached_property
    def symmetries(self) -> tuple[Symmetry, ...]:
        rows, cols = self.geometry.rows, self.geometry.cols
        identity = Symmetry("identity", tuple(range(rows * cols)), tuple(range(cols)))
        mirror = Symmetry(
            "mirror",
            tuple(r * cols + (cols - 1 - c) for r in range(rows) for c in range(cols)),
            tuple(cols - 1 - c for c in range(cols)),
        )
        return (identity, mirror)

    def new_state(self) -> Position:
        return Position(geometry=self.geometry)

    def new_batch(self, n: int, device: str | torch.device = "cpu") -> Boards:
        from c4core.games.connect4.batch import Boards

        return Boards(n, self.geometry, device)

    def batch_of(self, states: Sequence[Position], device: str | torch.device = "cpu") -> Boards:
        from c4core.games.connect4.batch import Boards

        if not states:
            return Boards(0, self.geometry, device)
        return Boards.from_positions(list(states), device)

    def parse_action(self, text: str) -> int:
        if not isinstance(text, str):
            raise ValueError(f"a move is a column number 1-{self.geometry.cols}, got {type(text).__name__}")
        return parse_column(text, self.geometry)

    def format_action(self, action: int) -> str:
        if not 0 <= action < self.geometry.cols:
            raise ValueError(f"action {action} is not a column of a {self.geometry.cols}-column board")
        return str(action + 1)

    def state_from_moves(self, moves: str) -> Position:
        return Position.from_moves(moves, self.geometry)

    def moves_string(self, actions: Sequence[int]) -> str:
        return "".join(self.format_action(int(a)) for a in actions)

    def search_tree(self, total: int) -> ConnectFourTree:
        """The search's tree storage for `total` nodes: bitboard arrays (`tree`)."""
        from c4core.games.connect4.tree import ConnectFourTree

        return ConnectFourTree(self.geometry, total)

    solvable = True
    """Every board has an exact solver (`solver`), within a node budget on large ones."""

    def exact_solver(self, max_nodes: int | None = None) -> Solver:
        """Pons's alpha-beta with a transposition table (`solver.Solver`), kept across calls."""
        from c4core.games.connect4.solver import Solver

        return Solver(self.geometry, max_nodes=max_nodes)

    def suite(self, path: str | Path | None = None, seed: int = 0) -> FileSuite | None:
        """The suite file `path` (`suite.FileSuite`: lines of solver-labelled positions of this
        board), None without one; `ValueError` naming the line of a bad file or of a position
        that does not fit the board."""
        from c4core.games.connect4.suite import FileSuite

        return FileSuite(path, self.geometry) if path is not None else None

    def bots(self) -> Mapping[str, Callable[[], Player]]:
        """`random`; `tactical` and `lookahead` (`bots`); `perfect`, the exact solver's (boards
        of at most 16 cells: `solver.PerfectBot`, whose module loads numba, so only when made)."""
        from c4core.games.connect4.bots import LookaheadBot, TacticalBot
        from c4core.games.players import RandomBot

        def perfect() -> Player:
            from c4core.games.connect4.solver import PerfectBot

            return PerfectBot(self.geometry)

        return {"random": RandomBot, "tactical": TacticalBot, "lookahead": LookaheadBot, "perfect": perfect}

    def kernel_match(
        self, a: Player, b: Player, pairs: int, seed: int, opening_plies: int
    ) -> np.ndarray | None:
        """The fast path of a match between two scripted bots with a compiled twin (`Player.kernel`
        in `kernels.KERNELS`): A's outcomes of `pairs` colour-swapped game pairs (A first in the
        even games), played in machine code; None when either has no twin."""
        from c4core.games.connect4 import kernels

        if a.kernel not in kernels.KERNELS or b.kernel not in kernels.KERNELS:
            return None
        g = self.geometry
        ids = kernels.KERNELS[a.kernel], kernels.KERNELS[b.kernel]
        return kernels.play_match(*ids, pairs, seed, opening_plies, g.rows, g.cols, g.connect)
