"""An exact Connect Four solver (Pascal Pons's alpha-beta, compiled with numba) and the `perfect` bot.

Scores follow Pons's convention: 0 is a draw, a positive score is a forced win for the side to
move, and a win that comes sooner scores higher: winning with the player's own n-th stone scores
``(cells + 1) // 2 + 1 - n``. A *weak* solve only tells win (+1), draw (0) or loss (-1), which
is all that "keeps the result" needs, and is several times faster.

The search is Pons's ("Solving Connect 4: how to build a perfect AI", 2017-2019):

- negamax with alpha-beta, only over *non-losing* moves (a move that lets the opponent complete
  a run at once is never tried; with two such threats the position is lost), so the side to move
  never has an immediate win inside the search;
- moves ordered by how many winning cells they leave the mover, ties to the centre;
- a transposition table of upper bounds keyed by ``mask + current`` (unique per position);
- the exact score found by null-window searches that bisect the score range, tried near 0 first.

Early positions are expensive: the shared dev suite left out early positions that took Pons's
own solver over a minute, and this one needs up to seconds on positions of plies 9-10
(docs/BENCHMARKS.md). `max_nodes` bounds
the work of one call; a solve that runs out returns None and leaves only sound entries in the
table (a search that stops early stores nothing on its way out).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from c4core.games.connect4.batch import Boards
from c4core.games.connect4.kernels import winning_cells
from c4core.games.connect4.rules import Geometry, Position
from c4core.games.players import Player, sample_actions

#: Entries of the default transposition table: Pons's prime just above 2**23 (76 MB here).
TABLE_SIZE = 8_388_617

_ABORTED = np.int64(-(1 << 40))


@njit(cache=True, inline="always")
def _popcount(x: np.int64) -> np.int64:
    n = np.int64(0)
    while x:
        x &= x - 1
        n += 1
    return n


@njit(cache=True)
def _negamax(
    cur: np.int64,
    mask: np.int64,
    ply: np.int64,
    alpha: np.int64,
    beta: np.int64,
    geo: np.ndarray,
    order: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    scratch: np.ndarray,
    budget: np.ndarray,
) -> np.int64:
    # geo: rows, cols, connect, height, bottom, board, cells, min_score
    height, k, bottom, board, cells, min_score = geo[3], geo[2], geo[4], geo[5], geo[6], geo[7]
    budget[0] += 1
    if budget[0] > budget[1]:
        return _ABORTED
    opp = cur ^ mask
    possible = (mask + bottom) & board
    opp_win = winning_cells(opp, mask, height, k, board)
    forced = possible & opp_win
    if forced:
        if forced & (forced - 1):
            return -((cells - ply) // 2)  # two threats at once: the opponent wins next move
        possible = forced
    moves = possible & ~(opp_win >> 1)  # never play under a cell where the opponent would win
    if moves == 0:
        return -((cells - ply) // 2)
    if ply >= cells - 2:
        return np.int64(0)  # neither side can win with the last two stones: a draw
    lo = -((cells - 2 - ply) // 2)  # the opponent cannot win at its next move
    if alpha < lo:
        alpha = lo
        if alpha >= beta:
            return alpha
    hi = (cells - 1 - ply) // 2  # we cannot win at this move (the search never enters a won one)
    key = mask + cur
    slot = key % keys.shape[0]
    if keys[slot] == key:
        hi = np.int64(values[slot]) + min_score - 1
    if beta > hi:
        beta = hi
        if alpha >= beta:
            return beta
    # order the moves: most winning cells left for the mover first, ties to the centre
    n = 0
    for j in range(order.shape[0]):
        col_bits = ((np.int64(1) << geo[0]) - 1) << (order[j] * height)
        move = moves & col_bits
        if move:
            score = _popcount(winning_cells(cur | move, mask | move, height, k, board))
            i = n
            while i > 0 and scratch[ply, 2 * (i - 1) + 1] < score:
                scratch[ply, 2 * i] = scratch[ply, 2 * (i - 1)]
                scratch[ply, 2 * i + 1] = scratch[ply, 2 * (i - 1) + 1]
                i -= 1
            scratch[ply, 2 * i] = move
            scratch[ply, 2 * i + 1] = score
            n += 1
    for i in range(n):
        move = scratch[ply, 2 * i]
        child_mask = mask | move
        score = _negamax(
            cur ^ mask, child_mask, ply + 1, -beta, -alpha, geo, order, keys, values, scratch, budget
        )
        if score == _ABORTED:
            return _ABORTED  # out of budget: unwind without storing anything
        score = -score
        if score >= beta:
            return score
        if score > alpha:
            alpha = score
    keys[slot] = key
    values[slot] = alpha - min_score + 1
    return alpha


@njit(cache=True, inline="always")
def _half_toward_zero(x: np.int64) -> np.int64:
    return x // 2 if x >= 0 else -((-x) // 2)


@njit(cache=True)
def _solve(
    cur: np.int64,
    mask: np.int64,
    ply: np.int64,
    weak: bool,
    geo: np.ndarray,
    order: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    scratch: np.ndarray,
    budget: np.ndarray,
) -> np.int64:
    """Score of a position that is neither won nor full (`_ABORTED` when out of budget)."""
    height, k, bottom, board, cells = geo[3], geo[2], geo[4], geo[5], geo[6]
    possible = (mask + bottom) & board
    if winning_cells(cur, mask, height, k, board) & possible:
        score = (cells + 1 - ply) // 2
        return np.int64(1) if weak and score > 0 else score
    lo, hi = -((cells - ply) // 2), (cells + 1 - ply) // 2
    if weak:
        lo, hi = np.int64(-1), np.int64(1)
    while lo < hi:  # bisect with null windows, trying scores near 0 first (Pons, part 10)
        med = lo + (hi - lo) // 2
        if med <= 0 and _half_toward_zero(lo) < med:
            med = _half_toward_zero(lo)
        elif med >= 0 and _half_toward_zero(hi) > med:
            med = _half_toward_zero(hi)
        r = _negamax(cur, mask, ply, med, med + 1, geo, order, keys, values, scratch, budget)
        if r == _ABORTED:
            return _ABORTED
        if r <= med:
            hi = r
        else:
            lo = r
    if weak:  # the bisection stops on a bound of the right sign, not on the score itself
        return np.int64(1) if lo > 0 else (np.int64(-1) if lo < 0 else np.int64(0))
    return lo


@njit(cache=True)
def _solve_many(
    cur: np.ndarray,
    mask: np.ndarray,
    ply: np.ndarray,
    weak: bool,
    geo: np.ndarray,
    order: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    scratch: np.ndarray,
    budget: np.ndarray,
    out: np.ndarray,
) -> np.int64:
    """`_solve` over arrays of positions, each with the whole node budget; returns the nodes
    searched in all (`out` gets `_ABORTED` where a budget ran out)."""
    total = np.int64(0)
    for i in range(len(cur)):
        budget[0] = 0
        out[i] = _solve(cur[i], mask[i], ply[i], weak, geo, order, keys, values, scratch, budget)
        total += budget[0]
    return total


class Solver:
    """Exact scores of positions of one geometry, with a transposition table kept across calls."""

    def __init__(self, geometry: Geometry, table_size: int | None = None, max_nodes: int | None = None):
        if table_size is None:  # small boards have few positions: spare the 76 MB
            table_size = TABLE_SIZE if geometry.cells > 20 else 65_537
        if table_size < 1:
            raise ValueError(f"table_size must be at least 1, got {table_size}")
        if max_nodes is not None and max_nodes < 1:
            raise ValueError(f"max_nodes must be at least 1, got {max_nodes}")
        g = self.geometry = geometry
        self.max_nodes = max_nodes
        self.nodes = 0
        """Nodes searched by the latest call."""
        self._geo = np.array(
            [g.rows, g.cols, g.connect, g.height, g.bottom_mask, g.board_mask, g.cells, -(g.cells // 2)],
            np.int64,
        )
        self._order = np.array(sorted(range(g.cols), key=lambda c: abs(2 * c - (g.cols - 1))), np.int64)
        self._keys = np.full(table_size, -1, np.int64)
        self._values = np.zeros(table_size, np.int16)
        self._scratch = np.zeros((g.cells + 1, 2 * g.cols), np.int64)

    def scores(
        self,
        current: np.ndarray,
        mask: np.ndarray,
        ply: np.ndarray,
        weak: bool = True,
        max_nodes: int | None = None,
    ) -> np.ndarray:
        """Scores of many positions given as bitboards (stones of the side to move, all stones,
        stones played), none of them won or full, in one compiled loop: float, NaN where the
        node budget (`max_nodes` each, else the solver's own) ran out. The batch form is for
        search, which probes hundreds of leaves a step."""
        n = len(current)
        out = np.zeros(n, np.int64)
        limit = max_nodes if max_nodes is not None else self.max_nodes
        budget = np.array([0, limit if limit is not None else 1 << 62], np.int64)
        self.nodes = int(
            _solve_many(
                np.ascontiguousarray(current, np.int64),
                np.ascontiguousarray(mask, np.int64),
                np.ascontiguousarray(ply, np.int64),
                weak,
                self._geo,
                self._order,
                self._keys,
                self._values,
                self._scratch,
                budget,
                out,
            )
        )
        return np.where(out == _ABORTED, np.nan, out.astype(np.float64))

    def _check(self, pos: Position) -> None:
        if pos.geometry != self.geometry:
            raise ValueError("position geometry does not match the solver's")
        if pos.won:
            raise ValueError("the game is already won")

    def score(self, pos: Position, weak: bool = False) -> int | None:
        """The exact score of `pos` for the side to move (with `weak`: +1, 0 or -1); None when
        the node budget ran out."""
        self._check(pos)
        if pos.is_full:
            return 0
        (value,) = self.scores(np.array([pos.current]), np.array([pos.mask]), np.array([pos.ply]), weak)
        return None if np.isnan(value) else int(value)

    def outcome(self, pos: Position, max_nodes: int | None = None) -> int | None:
        """`ExactSolver.outcome`: the result of `pos` for the side to move, +1, 0 or -1; None
        when `max_nodes` (None: the solver's own budget) ran out."""
        self._check(pos)
        if pos.is_full:
            return 0
        (value,) = self.scores(
            np.array([pos.current]), np.array([pos.mask]), np.array([pos.ply]), True, max_nodes
        )
        return None if np.isnan(value) else int(value)

    def move_scores(self, pos: Position, weak: bool = False) -> list[int | None] | None:
        """Exact score of each column for the side to move, None for a full column; the whole
        answer is None when the node budget ran out on some column."""
        self._check(pos)
        out: list[int | None] = []
        for c in range(self.geometry.cols):
            if not pos.can_play(c):
                out.append(None)
            elif pos.is_winning_move(c):
                out.append(1 if weak else (self.geometry.cells + 1 - pos.ply) // 2)
            else:
                child = pos.play(c)
                s = 0 if child.is_full else self.score(child, weak)
                if s is None:
                    return None
                out.append(-s)
        return out


class PerfectBot(Player):
    """Plays a move with the best exact score; ties are broken at random."""

    name = "perfect"

    def __init__(self, geometry: Geometry, max_cells: int = 16):
        # the standard board is solvable, but its early plies take seconds or more a move
        if geometry.cells > max_cells:
            raise ValueError(
                f"the perfect player handles boards up to {max_cells} cells, "
                f"not {geometry.rows}x{geometry.cols}"
            )
        self.solver = Solver(geometry)

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        weights = torch.zeros(len(boards), boards.geometry.cols)
        for i in range(len(boards)):
            if bool(boards.done[i]):
                continue
            scores = self.solver.move_scores(boards.position(i))
            assert scores is not None  # no node budget
            best = max(s for s in scores if s is not None)
            for c, s in enumerate(scores):
                weights[i, c] = float(s == best)
        return sample_actions(weights, generator).to(boards.device)
