"""Connect Four's own tree storage for the batched search (`c4core.learners.search`).

The search keeps its trees in flat arrays indexed by node id and asks a game's tree for the
states it needs (see `c4core.learners.search`). This one stores two bitboards and the ply per node, so
playing an edge is two integer operations on whole arrays of nodes, and on expansion it finds
with bitboard arithmetic the edges whose value is already exact: a move that completes a run
wins (length 1), one that fills the board without winning draws (length 1), and one after which
the opponent can complete a run at once loses (length 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from c4core.games.connect4.rules import Geometry, winning_cells

if TYPE_CHECKING:
    import torch

    from c4core.games.connect4.batch import Boards


class ConnectFourTree:
    """Node states of many search trees, as bitboard arrays of `total` nodes."""

    def __init__(self, geometry: Geometry, total: int):
        g = self.g = geometry
        self.cur = np.zeros(total, np.int64)
        self.mask = np.zeros(total, np.int64)
        self.ply = np.zeros(total, np.int64)
        self.bottom = np.array([g.bottom(i) for i in range(g.cols)], np.int64)
        self.top = np.array([g.top(i) for i in range(g.cols)], np.int64)
        self.column = np.array([g.column(i) for i in range(g.cols)], np.int64)

    def place(self, nodes: np.ndarray, batch: Boards, games: np.ndarray) -> None:
        """Put the games at `games` of `batch` at `nodes` (the roots)."""
        self.cur[nodes] = batch.current.cpu().numpy()[games]
        self.mask[nodes] = batch.mask.cpu().numpy()[games]
        self.ply[nodes] = batch.ply.cpu().numpy()[games]

    def to_move(self, nodes: np.ndarray) -> np.ndarray:
        """The player to move at `nodes`."""
        return self.ply[nodes] % 2

    def add_children(self, parents: np.ndarray, actions: np.ndarray, children: np.ndarray) -> None:
        """Store at `children` the states reached by playing `actions` at `parents`."""
        mask = self.mask[parents]
        self.cur[children] = self.cur[parents] ^ mask  # the opponent becomes the mover
        self.mask[children] = mask | (mask + self.bottom[actions])
        self.ply[children] = self.ply[parents] + 1

    def expand(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Legal edges [k, cols], their exact values for the node's mover (NaN unknown) and the
        plies to the end under those values."""
        g = self.g
        cur, mask = self.cur[nodes], self.mask[nodes]
        legal = (mask[:, None] & self.top) == 0
        landing = ((mask[:, None] + self.bottom) & self.column) * legal
        mine = winning_cells(cur, mask, g)
        theirs = winning_cells(cur ^ mask, mask, g)
        possible = (mask + g.bottom_mask) & g.board_mask
        win = legal & ((landing & mine[:, None]) != 0)
        full = legal & ~win & ((self.ply[nodes] + 1) == g.cells)[:, None]
        # after the move, the stone above it becomes playable and the landing cell is taken
        after = (possible[:, None] & ~landing) | ((landing << 1) & g.board_mask)
        lose = legal & ~win & ~full & ((theirs[:, None] & ~landing & after) != 0)
        exact = np.full(win.shape, np.nan)
        exact[win] = 1.0
        exact[full] = 0.0
        exact[lose] = -1.0
        return legal, exact, np.where(lose, 2, 1)

    def batch(self, nodes: np.ndarray, device: torch.device) -> Boards:
        """The states at `nodes` as a batch, for one network forward."""
        import torch

        from c4core.games.connect4.batch import Boards

        boards = Boards(len(nodes), self.g, device)
        boards.current = torch.from_numpy(self.cur[nodes]).to(device)
        boards.mask = torch.from_numpy(self.mask[nodes]).to(device)
        boards.ply = torch.from_numpy(self.ply[nodes]).to(device)
        return boards

    def probe(
        self, nodes: np.ndarray, solver: Any, from_ply: int, max_nodes: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact values of `nodes` from `solver` (`c4core.games.connect4.solver.Solver`) for those
        with at least `from_ply` stones that it settles within `max_nodes` (NaN elsewhere), and the
        most plies the game can still last, as the proof's length (a bound)."""
        values = np.full(len(nodes), np.nan)
        deep = self.ply[nodes] >= from_ply
        if deep.any():
            at = nodes[deep]
            values[deep] = solver.scores(
                self.cur[at], self.mask[at], self.ply[at], weak=True, max_nodes=max_nodes
            )
        return values, self.g.cells - self.ply[nodes]
