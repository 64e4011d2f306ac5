"""Connect Four on bitboards: the board geometry and one scalar `Position`.

Bit layout (after Pascal Pons's solver). Each column owns ``rows + 1`` bits, bottom cell first;
the extra bit on top of every column is a sentinel that is never set, so a run of stones can
never wrap from the top of one column into the bottom of the next. For the default 6x7 board::

      .  .  .  .  .  .  .      <- sentinel row (never set)
      5 12 19 26 33 40 47      <- top row
      4 11 18 25 32 39 46
      3 10 17 24 31 38 45
      2  9 16 23 30 37 44
      1  8 15 22 29 36 43
      0  7 14 21 28 35 42      <- bottom row
      col 1 ... 7 (solver notation counts columns from 1)

A position is two bitboards relative to the side to move: ``current`` holds the mover's stones
and ``mask`` every stone. Playing column ``c`` adds the column's bottom bit to ``mask``, which
carries up to the first empty cell::

    current ^= mask                       # the opponent becomes the mover
    mask |= mask + bottom(c)              # the new stone lands on top of column c

Worked example, moves ``"4453"`` on 6x7: first player holds bits 21 (col 4) and 28 (col 5),
second player bits 22 and 14. After four plies the first player is to move, so
``current = 1<<21 | 1<<28`` and ``mask = current | 1<<22 | 1<<14``.

Runs of ``connect`` stones are found by AND-ing shifted copies of a bitboard along the four
directions: 1 (vertical), H (horizontal), H-1 and H+1 (the diagonals), where H = rows + 1.

Everything here is pure game logic in plain Python, with no torch import, so a command that only
needs the rules starts fast. `c4core.games.connect4.batch` steps thousands of games at once as tensors; bots
and nets build on both, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from c4core.figures import quoted

#: Number of input planes the network sees (see `Position.planes`).
NUM_PLANES = 6


@dataclass(frozen=True)
class Geometry:
    """Board size and win length. The default is standard Connect Four."""

    rows: int = 6
    """Number of rows."""
    cols: int = 7
    """Number of columns; at most 9, so that a move is one digit in solver notation."""
    connect: int = 4
    """Stones in a row needed to win."""

    def __post_init__(self) -> None:
        if not (2 <= self.rows and 2 <= self.cols <= 9):
            raise ValueError(f"board must have at least 2 rows and 2-9 columns, got {self}")
        if (self.rows + 1) * self.cols > 63:
            raise ValueError(f"{self.rows}x{self.cols} does not fit a 63-bit bitboard")
        if not 2 <= self.connect <= max(self.rows, self.cols):
            raise ValueError(f"connect={self.connect} cannot fit on a {self.rows}x{self.cols} board")

    @property
    def height(self) -> int:
        """Bits per column: the rows plus one sentinel bit."""
        return self.rows + 1

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    @cached_property
    def bottom_mask(self) -> int:
        """One bit at the bottom of every column."""
        return sum(1 << (c * self.height) for c in range(self.cols))

    @cached_property
    def board_mask(self) -> int:
        """Every real cell (sentinels excluded)."""
        return self.bottom_mask * ((1 << self.rows) - 1)

    def bottom(self, col: int) -> int:
        return 1 << (col * self.height)

    def top(self, col: int) -> int:
        return 1 << (col * self.height + self.rows - 1)

    def column(self, col: int) -> int:
        return ((1 << self.rows) - 1) << (col * self.height)

    @cached_property
    def directions(self) -> tuple[int, ...]:
        h = self.height
        return (1, h, h - 1, h + 1)

    @cached_property
    def cell_bits(self) -> tuple[int, ...]:
        """Bit index of each cell in row-major order, top row first (the board-array order)."""
        return tuple(
            c * self.height + (self.rows - 1 - r) for r in range(self.rows) for c in range(self.cols)
        )

    @cached_property
    def centre_weights(self) -> tuple[int, ...]:
        """1,2,3,4,3,2,1 on seven columns: closeness to the centre, used by the tactical bot."""
        return tuple(min(c, self.cols - 1 - c) + 1 for c in range(self.cols))


STANDARD = Geometry()


def has_won(stones: int, g: Geometry) -> bool:
    """Whether a bitboard holds `g.connect` stones in a row."""
    for d in g.directions:
        run = stones
        for i in range(1, g.connect):
            run &= stones >> (i * d)
        if run:
            return True
    return False


def winning_cells(stones: int, mask: int, g: Geometry) -> int:
    """Empty cells where one more stone of `stones` would complete a run (reachable or not)."""
    found = 0
    k = g.connect
    for d in g.directions:
        for j in range(k):
            # the new stone sits at offset j of a run of k along direction d
            cand = g.board_mask
            for i in range(k):
                if i == j:
                    continue
                shift = (i - j) * d
                cand &= (stones >> shift) if shift > 0 else (stones << -shift)
            found |= cand
    return found & g.board_mask & ~mask


def popcount(x: int) -> int:
    return bin(x).count("1")


@dataclass(frozen=True)
class Position:
    """A single position, relative to the side to move; immutable, so `play` returns a new one."""

    current: int = 0
    """Stones of the side to move."""
    mask: int = 0
    """All stones."""
    geometry: Geometry = field(default=STANDARD)
    """Board size and win length."""
    won: bool = False
    """Whether the player who just moved completed a run (the game is over)."""

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_moves(cls, moves: str, geometry: Geometry = STANDARD) -> Position:
        """Replay a solver-notation string such as ``"4453"`` (columns 1..cols from the left)."""
        if not isinstance(moves, str):
            raise ValueError(f"moves must be a string of column digits, got {type(moves).__name__}")
        pos = cls(geometry=geometry)
        for i, ch in enumerate(moves.strip()):
            if not (ch.isascii() and ch.isdigit()) or not 1 <= int(ch) <= geometry.cols:
                raise ValueError(
                    f"bad move {ch!r} at position {i + 1} of {quoted(moves)}: "
                    f"expected a column digit 1-{geometry.cols}"
                )
            col = int(ch) - 1
            if pos.won:
                raise ValueError(f"move {i + 1} of {quoted(moves)} comes after the game was already won")
            if not pos.can_play(col):
                kind = "the board is full" if pos.is_full else f"column {col + 1} is full"
                raise ValueError(f"move {i + 1} of {quoted(moves)} is illegal: {kind}")
            pos = pos.play(col)
        return pos

    @classmethod
    def from_board(cls, board: Sequence[Sequence[int]], geometry: Geometry = STANDARD) -> Position:
        """Build from rows top to bottom with 0 empty, 1 first player, 2 second player.

        Rejects wrong shapes, other values, floating stones, impossible stone counts and boards
        on which someone has already won, each with a `ValueError` saying what is wrong.
        """
        g = geometry
        arr = _as_int_grid(board, g)
        first = second = 0
        for r in range(g.rows):
            for c in range(g.cols):
                v = arr[r][c]
                bit = 1 << (c * g.height + (g.rows - 1 - r))
                if v == 1:
                    first |= bit
                elif v == 2:
                    second |= bit
        mask = first | second
        for c in range(g.cols):
            col_bits = (mask >> (c * g.height)) & ((1 << g.rows) - 1)
            if col_bits & (col_bits + 1):
                raise ValueError(f"column {c + 1} has a floating stone (an empty cell below a stone)")
        n1, n2 = popcount(first), popcount(second)
        if n1 not in (n2, n2 + 1):
            raise ValueError(
                f"impossible stone counts: {n1} of player 1 and {n2} of player 2 "
                "(player 1 moves first, so it has as many stones as player 2, or one more)"
            )
        for who, stones in ((1, first), (2, second)):
            if has_won(stones, g):
                raise ValueError(f"player {who} has already won on this board")
        current = first if n1 == n2 else second
        return cls(current=current, mask=mask, geometry=g)

    # ---- queries --------------------------------------------------------------------------------
    @property
    def ply(self) -> int:
        return popcount(self.mask)

    @property
    def opponent(self) -> int:
        return self.current ^ self.mask

    @property
    def is_full(self) -> bool:
        return self.ply == self.geometry.cells

    @property
    def is_terminal(self) -> bool:
        return self.won or self.is_full

    @property
    def to_move(self) -> int:
        """1 if the first player is to move, else 2."""
        return 1 if self.ply % 2 == 0 else 2

    def can_play(self, col: int) -> bool:
        return 0 <= col < self.geometry.cols and not (self.mask & self.geometry.top(col))

    def legal_moves(self) -> list[int]:
        if self.won:
            return []
        return [c for c in range(self.geometry.cols) if self.can_play(c)]

    def possible(self) -> int:
        """Bitboard of the cells where a stone can land now."""
        g = self.geometry
        return (self.mask + g.bottom_mask) & g.board_mask

    def is_winning_move(self, col: int) -> bool:
        return bool(self._landing(col) & winning_cells(self.current, self.mask, self.geometry))

    def threats(self) -> tuple[int, int]:
        """Winning cells of the side to move and of its opponent, as bitboards."""
        g = self.geometry
        return winning_cells(self.current, self.mask, g), winning_cells(self.opponent, self.mask, g)

    def _landing(self, col: int) -> int:
        g = self.geometry
        return (self.mask + g.bottom(col)) & g.column(col)

    # ---- moves ----------------------------------------------------------------------------------
    def play(self, col: int) -> Position:
        """The position after the side to move drops a stone in `col` (0-based)."""
        if self.won:
            raise ValueError("the game is already won")
        if not 0 <= col < self.geometry.cols:
            raise ValueError(f"column {col + 1} is off the board (1-{self.geometry.cols})")
        if not self.can_play(col):
            raise ValueError(f"column {col + 1} is full")
        g = self.geometry
        new_mask = self.mask | (self.mask + g.bottom(col))
        mover = self.current | (new_mask ^ self.mask)
        return Position(
            current=self.current ^ self.mask,
            mask=new_mask,
            geometry=g,
            won=has_won(mover, g),
        )

    def mirror(self) -> Position:
        """The left-right mirror image."""
        g = self.geometry
        col_bits = (1 << g.height) - 1

        def flip(b: int) -> int:
            return sum(
                ((b >> (c * g.height)) & col_bits) << ((g.cols - 1 - c) * g.height) for c in range(g.cols)
            )

        return Position(flip(self.current), flip(self.mask), g, self.won)

    # ---- the game interface (`c4core.games.base.State`) -------------------------------------------
    def legal_actions(self) -> list[int]:
        return self.legal_moves()

    def apply(self, action: int) -> Position:
        return self.play(action)

    def current_player(self) -> int:
        """0 if the first player is to move, else 1."""
        return self.ply % 2

    def returns(self) -> tuple[float, float]:
        """(+1, -1) when the first player has won, (-1, +1) when the second has, else (0, 0)."""
        if not self.won:
            return (0.0, 0.0)
        return (-1.0, 1.0) if self.current_player() == 0 else (1.0, -1.0)  # the last mover won

    def observation(self) -> np.ndarray:
        return self.planes()

    # ---- views ----------------------------------------------------------------------------------
    def board(self) -> list[list[int]]:
        """Rows top to bottom, 0 empty, 1 first player, 2 second player."""
        g = self.geometry
        first = self.current if self.ply % 2 == 0 else self.opponent
        out = []
        for r in range(g.rows):
            row = []
            for c in range(g.cols):
                bit = 1 << (c * g.height + (g.rows - 1 - r))
                row.append(0 if not self.mask & bit else (1 if first & bit else 2))
            out.append(row)
        return out

    def planes(self) -> np.ndarray:
        """The network input, from the mover's perspective: float32 [NUM_PLANES, rows, cols]."""
        g = self.geometry
        mine, theirs = self.threats()
        bitboards = (self.current, self.opponent, self.possible(), mine, theirs)
        bits = np.array(g.cell_bits)
        out = np.ones((NUM_PLANES, g.rows, g.cols), dtype=np.float32)
        for i, b in enumerate(bitboards):
            out[i] = ((np.uint64(b) >> bits.astype(np.uint64)) & np.uint64(1)).reshape(g.rows, g.cols)
        return out

    def key(self) -> int:
        """A unique key of the position (Pons): mask + current + bottom."""
        return self.mask + self.current + self.geometry.bottom_mask

    def __str__(self) -> str:
        symbols = {0: ".", 1: "X", 2: "O"}
        lines = [" ".join(symbols[v] for v in row) for row in self.board()]
        lines.append(" ".join(str(c + 1) for c in range(self.geometry.cols)))
        return "\n".join(lines)


def _as_int_grid(board: Sequence[Sequence[int]], g: Geometry) -> list[list[int]]:
    if isinstance(board, np.ndarray):
        board = board.tolist()
    if not isinstance(board, (list, tuple)) or len(board) != g.rows:
        got = len(board) if isinstance(board, (list, tuple)) else type(board).__name__
        raise ValueError(f"board must be a list of {g.rows} rows, got {got}")
    out = []
    for r, row in enumerate(board):
        if not isinstance(row, (list, tuple)) or len(row) != g.cols:
            got = len(row) if isinstance(row, (list, tuple)) else type(row).__name__
            raise ValueError(f"row {r + 1} must have {g.cols} cells, got {got}")
        cells = []
        for c, v in enumerate(row):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v not in (0, 1, 2):
                raise ValueError(f"cell at row {r + 1}, column {c + 1} is {v!r}; use 0, 1 or 2")
            cells.append(int(v))
        out.append(cells)
    return out


def parse_column(text: str, g: Geometry = STANDARD) -> int:
    """A column typed by a person (``"4"``), as a 0-based index; `ValueError` when malformed."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= g.cols:
        raise ValueError(f"expected a column number 1-{g.cols}, got {text!r}")
    return int(text) - 1
