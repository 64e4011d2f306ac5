"""An exact solver for small variants (4x4 connect-3 and the like), and the `perfect` bot on it.

Full-width negamax over every reachable position, memoised by the Pons position key. Scores
follow Pascal Pons's convention: 0 is a draw, a positive score is a forced win for the side to
move, and a win that comes sooner scores higher: winning with the player's own n-th stone scores
``(cells + 1) // 2 + 1 - n``.

Plain Python, so it is meant for boards up to 16 cells; the standard 6x7 board needs
Pons's full solver, which we do not ship (the dev suite in ``shared/suite`` carries its labels).
"""

from __future__ import annotations

import torch

from c4core.batch import Boards
from c4core.bots import Player, sample_columns
from c4core.game import Geometry, Position


class Solver:
    """Exact scores of positions of one geometry; caches every solved position."""

    def __init__(self, geometry: Geometry, max_cells: int = 16):
        if geometry.cells > max_cells:
            raise ValueError(
                f"the exact solver handles boards up to {max_cells} cells, "
                f"not {geometry.rows}x{geometry.cols}"
            )
        self.geometry = geometry
        self._table: dict[int, int] = {}

    def _win_score(self, pos: Position) -> int:
        """Score of winning with the mover's next stone."""
        g = self.geometry
        return (g.cells + 1) // 2 + 1 - (pos.ply // 2 + 1)

    def score(self, pos: Position) -> int:
        """The exact score of `pos` for the side to move."""
        if pos.geometry != self.geometry:
            raise ValueError("position geometry does not match the solver's")
        if pos.won:
            raise ValueError("the game is already won")
        return self._negamax(pos)

    def _negamax(self, pos: Position) -> int:
        # Full-width negamax with memoisation: small boards have few enough positions that every
        # one can be solved exactly, which keeps the table free of alpha-beta bounds.
        if pos.is_full:
            return 0
        key = pos.key()
        cached = self._table.get(key)
        if cached is not None:
            return cached
        legal = pos.legal_moves()
        if any(pos.is_winning_move(c) for c in legal):
            best = self._win_score(pos)
        else:
            best = max(-self._negamax(pos.play(c)) for c in legal)
        self._table[key] = best
        return best

    def move_scores(self, pos: Position) -> list[int | None]:
        """Exact score of each column for the side to move; None for a full column."""
        out: list[int | None] = []
        for c in range(self.geometry.cols):
            if not pos.can_play(c):
                out.append(None)
            elif pos.is_winning_move(c):
                out.append(self._win_score(pos))
            else:
                child = pos.play(c)
                out.append(0 if child.is_full else -self.score(child))
        return out


class PerfectBot(Player):
    """Plays a move with the best exact score; ties are broken at random."""

    name = "perfect"

    def __init__(self, geometry: Geometry):
        self.solver = Solver(geometry)

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        weights = torch.zeros(len(boards), boards.geometry.cols)
        for i in range(len(boards)):
            if bool(boards.done[i]):
                continue
            scores = self.solver.move_scores(boards.position(i))
            best = max(s for s in scores if s is not None)
            for c, s in enumerate(scores):
                weights[i, c] = float(s == best)
        return sample_columns(weights, generator).to(boards.device)
