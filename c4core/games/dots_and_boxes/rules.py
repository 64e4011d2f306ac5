"""Dots and Boxes on R x C boxes: the line numbering, the board, and the scalar `DotsState`.

Lines are numbered as OpenSpiel numbers them: first the horizontal lines row by row, then the
vertical lines row by row. On 2 x 2 boxes (rows=2, cols=2)::

      +-0-+-1-+         h(r, c) = r * cols + c                      (r = 0..rows, c = 0..cols-1)
      6   7   8         v(r, c) = (rows + 1) * cols + r * (cols + 1) + c  (r = 0..rows-1, c = 0..cols)
      +-2-+-3-+
      9  10  11         box (r, c) is closed by h(r, c), h(r + 1, c), v(r, c) and v(r, c + 1):
      +-4-+-5-+         box (0, 0) by lines 0, 2, 6 and 7

A position is the set of drawn lines as one int (bit i: line i drawn; a board of at most 63
lines fits one int64), the boxes each player owns (bit b: box ``r * cols + c``) and the player
to move. A player who draws a box's fourth side owns that box and **moves again**; otherwise the
turn passes. The game ends when every line is drawn; the player owning more boxes wins (+1),
equal counts draw. The box margin is there too (`DotsState.margin`, and `DotsState.margin_returns`
over the board's boxes), as a training target and for suites that ask whether a move keeps the
exact value.

Move notation: ``h<r>,<c>`` or ``v<r>,<c>``, 0-based (``h0,1`` is the top line of box (0, 1));
a move string is moves separated by spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from c4core.figures import quoted

MAX_LINES = 24
"""The most lines the exact solver's table is built for (`solver`): 2^24 line sets, one byte
each (3x3 boxes)."""
SEARCHED_LINES = 40
"""The most lines of a board whose exact solver is the endgame search (`endgame`), past the
table's `MAX_LINES`: 4x4 boxes, the largest board the search's cost is measured on
(docs/BENCHMARKS.md). The search is exact on larger boards too; the game offers it there once
its cost is measured."""
ENDGAME_LINES = 20
"""Lines left from which the endgame search settles a position cheaply, within a rescoring's
node budget (docs/BENCHMARKS.md has the cost by lines left), so its board's
`DotsAndBoxes.exact_from` is the ply that leaves them."""
DRAWN_LINE = -(1 << 20)
"""The value the solvers give a line already drawn, in a row of every line's value."""
NUM_PLANES = 11
"""Observation planes (`c4core.games.dots_and_boxes.batch.DotsBoards.observation`): drawn lines,
the mover's boxes, the opponent's boxes, boxes with three sides drawn (a box the mover can take
now), and a constant plane that marks the board's extent; then the chains, which a small
convolutional net cannot count on its own: boxes in a short chain (one or two boxes), in a long
chain (three or more) and in a loop, the safe lines (those that give no box a third side and
take none), and two constant planes, the parity of the long chains (what Berlekamp's long-chain
rule counts) and that of the safe lines. The first five planes were the whole observation
before the chains were added, so older snapshots load with zero weights on the rest
(`c4core.learners.net.PolicyValueNet.load_snapshot`)."""

_MOVE = re.compile(r"^\s*([hHvV])\s*(\d+)\s*,\s*(\d+)\s*$")


@dataclass(frozen=True)
class Boxes:
    """Board size in boxes."""

    rows: int = 3
    """Rows of boxes."""
    cols: int = 3
    """Columns of boxes."""

    def __post_init__(self) -> None:
        if self.rows < 1 or self.cols < 1:
            raise ValueError(
                f"a board needs at least one row and one column of boxes, got {self.rows}x{self.cols}"
            )
        if self.lines > 63:
            raise ValueError(
                f"{self.rows}x{self.cols} boxes have {self.lines} lines: more than an int64 holds"
            )

    @property
    def horizontal(self) -> int:
        """Number of horizontal lines."""
        return (self.rows + 1) * self.cols

    @property
    def lines(self) -> int:
        return self.horizontal + self.rows * (self.cols + 1)

    @property
    def boxes(self) -> int:
        return self.rows * self.cols

    @property
    def all_lines(self) -> int:
        return (1 << self.lines) - 1

    def h(self, r: int, c: int) -> int:
        return r * self.cols + c

    def v(self, r: int, c: int) -> int:
        return self.horizontal + r * (self.cols + 1) + c

    @cached_property
    def box_masks(self) -> tuple[int, ...]:
        """The four lines of each box, as a bitmask, box ``r * cols + c`` at index ``r * cols + c``."""
        return tuple(
            (1 << self.h(r, c)) | (1 << self.h(r + 1, c)) | (1 << self.v(r, c)) | (1 << self.v(r, c + 1))
            for r in range(self.rows)
            for c in range(self.cols)
        )

    @cached_property
    def line_boxes(self) -> tuple[tuple[int, int], ...]:
        """The (at most two) boxes each line is a side of, by line, -1 for none: the compiled
        solvers and bots take it as an array [lines, 2]."""
        out = [[-1, -1] for _ in range(self.lines)]
        for b, mask in enumerate(self.box_masks):
            for a in range(self.lines):
                if mask >> a & 1:
                    out[a][0 if out[a][0] < 0 else 1] = b
        return tuple((x, y) for x, y in out)

    @property
    def grid(self) -> tuple[int, int]:
        """(height, width) of the observation grid: dots, lines and boxes on a 2R+1 x 2C+1 grid."""
        return (2 * self.rows + 1, 2 * self.cols + 1)

    @cached_property
    def line_cells(self) -> tuple[tuple[int, int], ...]:
        """Grid cell (y, x) of each line: h(r, c) at (2r, 2c+1), v(r, c) at (2r+1, 2c)."""
        h = [(2 * r, 2 * c + 1) for r in range(self.rows + 1) for c in range(self.cols)]
        v = [(2 * r + 1, 2 * c) for r in range(self.rows) for c in range(self.cols + 1)]
        return tuple(h + v)

    @cached_property
    def box_cells(self) -> tuple[tuple[int, int], ...]:
        """Grid cell (y, x) of each box: (2r+1, 2c+1)."""
        return tuple((2 * r + 1, 2 * c + 1) for r in range(self.rows) for c in range(self.cols))

    def completed(self, lines: int) -> int:
        """The boxes whose four sides are all in `lines`, as a bitmask."""
        return sum(1 << b for b, m in enumerate(self.box_masks) if lines & m == m)

    def format_action(self, action: int) -> str:
        if not 0 <= action < self.lines:
            raise ValueError(
                f"action {action} is not a line of {self.rows}x{self.cols} boxes (0-{self.lines - 1})"
            )
        if action < self.horizontal:
            return f"h{action // self.cols},{action % self.cols}"
        a = action - self.horizontal
        return f"v{a // (self.cols + 1)},{a % (self.cols + 1)}"

    def parse_action(self, text: str) -> int:
        expected = (
            f"expected a line such as h0,1 (h<row 0-{self.rows}>,<col 0-{self.cols - 1}>) "
            f"or v1,0 (v<row 0-{self.rows - 1}>,<col 0-{self.cols}>)"
        )
        if not isinstance(text, str):
            raise ValueError(f"{expected}, got {type(text).__name__}")
        m = _MOVE.match(text)
        if not m:
            raise ValueError(f"{expected}, got {quoted(text)}")
        kind, r, c = m.group(1).lower(), int(m.group(2)), int(m.group(3))
        if kind == "h" and r <= self.rows and c < self.cols:
            return self.h(r, c)
        if kind == "v" and r < self.rows and c <= self.cols:
            return self.v(r, c)
        raise ValueError(f"{quoted(text.strip())} is off the {self.rows}x{self.cols} board: {expected}")


def popcount(x: int) -> int:
    return bin(x).count("1")


@dataclass(frozen=True)
class DotsState:
    """A single position (`c4core.games.base.State`); immutable, so `apply` returns a new one."""

    boxes: Boxes = field(default_factory=Boxes)
    """Board size."""
    lines: int = 0
    """Drawn lines, bit i for line i."""
    owned: tuple[int, int] = (0, 0)
    """The boxes each player owns, as bitmasks."""
    player: int = 0
    """The player to move."""

    @property
    def is_terminal(self) -> bool:
        return self.lines == self.boxes.all_lines

    def legal_actions(self) -> list[int]:
        return [a for a in range(self.boxes.lines) if not self.lines >> a & 1]

    def apply(self, action: int) -> DotsState:
        b = self.boxes
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < b.lines:
            raise ValueError(f"action {action!r} is not a line of {b.rows}x{b.cols} boxes (0-{b.lines - 1})")
        if self.lines >> action & 1:
            raise ValueError(f"line {b.format_action(int(action))} is already drawn")
        lines = self.lines | (1 << int(action))
        new = b.completed(lines) & ~b.completed(self.lines)
        owned = list(self.owned)
        owned[self.player] |= new
        player = self.player if new else 1 - self.player
        return DotsState(b, lines, (owned[0], owned[1]), player)

    def current_player(self) -> int:
        return self.player

    @property
    def ply(self) -> int:
        """Lines drawn: every move draws one."""
        return popcount(self.lines)

    def margin(self) -> int:
        """The first player's boxes minus the second's."""
        return popcount(self.owned[0]) - popcount(self.owned[1])

    def returns(self) -> tuple[float, float]:
        if not self.is_terminal:
            return (0.0, 0.0)
        s = float(np.sign(self.margin()))
        return (s, -s)

    def margin_returns(self) -> tuple[float, float]:
        """Each player's box difference over the board's boxes at the end, (0, 0) before: the
        result graded by how much it was won by (`c4core.games.base.Game`'s ``has_margin``)."""
        if not self.is_terminal:
            return (0.0, 0.0)
        m = self.margin() / self.boxes.boxes
        return (m, -m)

    def observation(self) -> np.ndarray:
        from c4core.games.dots_and_boxes.batch import DotsBoards  # the planes' one home

        return DotsBoards.from_states([self], self.boxes).observation()[0].numpy()

    def key(self) -> int:
        # the drawn lines and the mover's lead fix the rest of the game: who owns which box does not
        b, m = self.boxes, self.margin()
        lead = m if self.player == 0 else -m
        return self.lines | (lead + b.boxes) << b.lines

    def __str__(self) -> str:
        b = self.boxes
        height, width = b.grid
        rows = [[" "] * (2 * width - 1) for _ in range(height)]
        for y in range(0, height, 2):
            for x in range(0, width, 2):
                rows[y][2 * x] = "+"
        for i, (y, x) in enumerate(b.line_cells):
            if self.lines >> i & 1:
                if y % 2 == 0:
                    rows[y][2 * x - 1 : 2 * x + 2] = ["-"] * 3
                else:
                    rows[y][2 * x] = "|"
        for i, (y, x) in enumerate(b.box_cells):
            for p, mark in ((0, "A"), (1, "B")):
                if self.owned[p] >> i & 1:
                    rows[y][2 * x] = mark
        lines = ["".join(r).rstrip() for r in rows]
        a, z = popcount(self.owned[0]), popcount(self.owned[1])
        lines.append(f"A {a} : B {z}, {'game over' if self.is_terminal else 'AB'[self.player] + ' to move'}")
        return "\n".join(lines)
