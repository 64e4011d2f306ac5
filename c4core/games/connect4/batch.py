"""Batched Connect Four: thousands of games stepped together as int64 tensors, on any device.

Same bit layout and rules as `c4core.games.connect4.rules` (see the diagram there); every operation is a
whole-batch tensor op, so the engine runs unchanged on a CUDA device next to the network.
Finished games ignore further moves, so callers step the whole batch at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from c4core.games.connect4.rules import NUM_PLANES, STANDARD, Geometry, Position


class Boards:
    """A batch of games stepped together as int64 tensors, on any torch device.

    ``current``/``mask`` follow the scalar layout. ``done`` marks finished games and ``result``
    holds +1 (first player won), -1 (second player won) or 0 (draw or not finished).
    Finished games ignore further moves, so callers can step the whole batch at once.
    """

    def __init__(self, n: int, geometry: Geometry = STANDARD, device: str | torch.device = "cpu"):
        self.geometry = geometry
        self.device = torch.device(device)
        self.current = torch.zeros(n, dtype=torch.int64, device=self.device)
        self.mask = torch.zeros(n, dtype=torch.int64, device=self.device)
        self.ply = torch.zeros(n, dtype=torch.int64, device=self.device)
        self.done = torch.zeros(n, dtype=torch.bool, device=self.device)
        self.result = torch.zeros(n, dtype=torch.int64, device=self.device)
        g = geometry
        t = dict(dtype=torch.int64, device=self.device)
        self._bottom = torch.tensor([g.bottom(c) for c in range(g.cols)], **t)
        self._top = torch.tensor([g.top(c) for c in range(g.cols)], **t)
        self._column = torch.tensor([g.column(c) for c in range(g.cols)], **t)
        self._cell_bits = torch.tensor(g.cell_bits, **t)

    def __len__(self) -> int:
        return self.current.shape[0]

    @classmethod
    def from_positions(cls, positions: Sequence[Position], device: str | torch.device = "cpu") -> Boards:
        g = positions[0].geometry if positions else STANDARD
        b = cls(len(positions), g, device)
        b.current = torch.tensor([p.current for p in positions], dtype=torch.int64, device=b.device)
        b.mask = torch.tensor([p.mask for p in positions], dtype=torch.int64, device=b.device)
        b.ply = torch.tensor([p.ply for p in positions], dtype=torch.int64, device=b.device)
        full = b.ply == g.cells
        won = torch.tensor([p.won for p in positions], dtype=torch.bool, device=b.device)
        b.done = won | full
        # the player who just moved won: first player if the ply count is now odd
        b.result = torch.where(won, torch.where(b.ply % 2 == 1, 1, -1), 0).to(torch.int64)
        return b

    def position(self, i: int) -> Position:
        won = bool(self.done[i]) and int(self.result[i]) != 0
        return Position(int(self.current[i]), int(self.mask[i]), self.geometry, won)

    def select(self, idx: torch.Tensor) -> Boards:
        """A new batch holding the games at `idx` (copies)."""
        b = Boards.__new__(Boards)
        b.__dict__.update(self.__dict__)
        for name in ("current", "mask", "ply", "done", "result"):
            setattr(b, name, getattr(self, name)[idx].clone())
        return b

    def legal(self) -> torch.Tensor:
        """[n, cols] bool: columns with room, all False for finished games."""
        room = (self.mask.unsqueeze(1) & self._top) == 0
        return room & ~self.done.unsqueeze(1)

    def possible(self) -> torch.Tensor:
        g = self.geometry
        return (self.mask + g.bottom_mask) & g.board_mask

    def winning_cells(self, stones: torch.Tensor) -> torch.Tensor:
        """Empty cells where one more stone of `stones` completes a run, batched."""
        g = self.geometry
        found = torch.zeros_like(stones)
        for d in g.directions:
            # shifted[s] = stones moved by s*d (positive s looks "ahead" along the direction)
            shifted = {
                s: (stones >> (s * d)) if s > 0 else (stones << (-s * d))
                for s in range(-(g.connect - 1), g.connect)
                if s != 0
            }
            for j in range(g.connect):
                cand = torch.full_like(stones, g.board_mask)
                for i in range(g.connect):
                    if i != j:
                        cand &= shifted[i - j]
                found |= cand
        return found & g.board_mask & ~self.mask

    def threats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Winning cells of the mover and of the opponent."""
        return self.winning_cells(self.current), self.winning_cells(self.current ^ self.mask)

    def column_bits(self, bitboard: torch.Tensor) -> torch.Tensor:
        """[n, cols] bool: whether `bitboard` meets each column's landing cell."""
        landing = (self.mask.unsqueeze(1) + self._bottom) & self._column
        return (landing & bitboard.unsqueeze(1)) != 0

    def play(self, cols: torch.Tensor, where: torch.Tensor | None = None) -> None:
        """Drop a stone for the side to move in every unfinished game (of those `where` marks,
        [n] bool, when given); `cols` is [n] long.

        Raises `ValueError` if any such game is asked for a full or off-board column, so a
        buggy player can never sneak an illegal move into a record.
        """
        g = self.geometry
        active = ~self.done if where is None else ~self.done & where.to(self.device)
        cols = cols.to(self.device, torch.int64)
        ok = (cols >= 0) & (cols < g.cols)
        safe = cols.clamp(0, g.cols - 1)
        ok &= (self.mask & self._top[safe]) == 0
        if bool((active & ~ok).any()):
            bad = int(torch.nonzero(active & ~ok)[0, 0])
            raise ValueError(f"illegal move: column {int(cols[bad]) + 1} in game {bad}")
        new_mask = self.mask | (self.mask + self._bottom[safe])
        mover = self.current | (new_mask ^ self.mask)
        won = _has_won(mover, g) & active
        self.current = torch.where(active, self.current ^ self.mask, self.current)
        self.mask = torch.where(active, new_mask, self.mask)
        self.ply = self.ply + active.long()
        # after the move, ply is odd when the first player just moved
        self.result = torch.where(won, torch.where(self.ply % 2 == 1, 1, -1), self.result)
        self.done = self.done | won | (self.ply == g.cells)

    def first_player_to_move(self) -> torch.Tensor:
        return self.ply % 2 == 0

    # ---- the game interface (`c4core.games.base.BatchState`) --------------------------------------
    def to_move(self) -> torch.Tensor:
        """[n] int64: 0 where the first player is to move, else 1."""
        return self.ply % 2

    def returns(self) -> torch.Tensor:
        """[n, 2] float32: (+1, -1) where the first player won, (-1, +1) where the second did."""
        first = self.result.float()
        return torch.stack((first, -first), 1)

    def observation(self) -> torch.Tensor:
        return self.planes()

    def keys(self) -> torch.Tensor:
        """[n] int64: each game's `Position.key`."""
        return self.mask + self.current + self.geometry.bottom_mask

    def state(self, i: int) -> Position:
        return self.position(i)

    def planes(self) -> torch.Tensor:
        """[n, NUM_PLANES, rows, cols] float32 network input from each mover's perspective."""
        g = self.geometry
        mine, theirs = self.threats()
        stacked = torch.stack((self.current, self.current ^ self.mask, self.possible(), mine, theirs), dim=1)
        bits = (stacked.unsqueeze(-1) >> self._cell_bits) & 1
        ones = torch.ones_like(bits[:, :1])
        return torch.cat((bits, ones), 1).float().view(len(self), NUM_PLANES, g.rows, g.cols)


def _has_won(stones: torch.Tensor, g: Geometry) -> torch.Tensor:
    won = torch.zeros(stones.shape, dtype=torch.bool, device=stones.device)
    for d in g.directions:
        run = stones
        for i in range(1, g.connect):
            run = run & (stones >> (i * d))
        won |= run != 0
    return won
