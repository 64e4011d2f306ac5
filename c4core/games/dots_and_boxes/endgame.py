"""Dots and Boxes endgames solved exactly on boards too large for a table (4x4 boxes, 40 lines):
alpha-beta over the lines left, with a transposition table, compiled with numba.

The value of a set of drawn lines is the solver's (`solver`, after Wilson): the best box
difference the player to move can still gain. Negamax reads it off the same rule, ``c + V(after)``
for a line that completes ``c`` boxes (the mover moves again) and ``-V(after)`` otherwise. Two
things keep the tree small:

- **Independent captures.** A line that completes every box it is a side of changes no other
  box, so taking it now is never worse than later: the solver takes it and searches nothing
  else there. (Tests check every value against the 3x3 table.)
- **Order and memory.** Captures first, then lines that give no box a third side, then the
  rest; each set of lines keeps its value or bound in a transposition table that lives as long
  as the solver, so labelling a position's every line reuses what its siblings found.

The tree grows about fivefold with each line left, so the solver is for endgames: a position
with many lines left runs past its node budget: its value raises `PastBudget`, and its
`outcome` and `margin_value` are None, as `ExactSolver` asks (docs/BENCHMARKS.md has the time by
lines left).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from c4core.games.dots_and_boxes.kernels import closes
from c4core.games.dots_and_boxes.rules import DRAWN_LINE, Boxes, DotsState, popcount

EXACT, LOWER, UPPER = 0, 1, 2
"""A transposition-table entry's kind: the value, or a bound on it from a cut-off."""
TABLE_BITS = 22
"""log2 of the transposition table's entries (4M entries, 40 MiB)."""
NODES = 50_000_000
"""The node budget a position of an `EndgameSolver` made without one."""
FIBONACCI = -7046029254386353131
"""2^64 / golden ratio (0x9E3779B97F4A7C15) as a signed int64: Fibonacci hashing of a line set
into the table (Knuth)."""


class PastBudget(ValueError):
    """The search needed more nodes than its budget: the position is not settled."""


@njit(cache=True)
def _third_sides(lines: np.int64, line: np.int64, line_boxes: np.ndarray, box_masks: np.ndarray) -> np.int64:
    """The boxes that drawing `line` onto `lines` gives a third side."""
    n = 0
    for k in range(2):
        b = line_boxes[line, k]
        if b >= 0:
            drawn = lines & box_masks[b]
            c = 0
            while drawn:
                drawn &= drawn - 1
                c += 1
            if c == 2:
                n += 1
    return n


@njit(cache=True)
def _negamax(
    lines: np.int64,
    alpha: int,
    beta: int,
    n_lines: int,
    full: np.int64,
    line_boxes: np.ndarray,
    box_masks: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    kinds: np.ndarray,
    budget: np.ndarray,
) -> int:
    if lines == full:
        return 0
    budget[0] -= 1
    if budget[0] < 0:
        return 0  # the caller sees the spent budget and discards the result
    slot = ((lines * np.int64(FIBONACCI)) >> np.int64(24)) & (keys.size - 1)
    if keys[slot] == lines + 1:
        v, kind = np.int64(values[slot]), kinds[slot]
        if kind == EXACT:
            return v
        if kind == LOWER and v > alpha:
            alpha = v
        elif kind == UPPER and v < beta:
            beta = v
        if alpha >= beta:
            return v
    for a in range(n_lines):  # an independent capture: take it and look no further
        bit = np.int64(1) << a
        if lines & bit:
            continue
        taken = closes(lines, a, line_boxes, box_masks)
        sides = (line_boxes[a, 0] >= 0) + (line_boxes[a, 1] >= 0)
        if taken > 0 and taken == sides:
            return taken + _negamax(
                lines | bit, alpha - taken, beta - taken, n_lines, full,
                line_boxes, box_masks, keys, values, kinds, budget,
            )  # fmt: skip
    alpha0, best = alpha, -1000
    for phase in range(3):  # captures, then lines that offer nothing, then the rest
        for a in range(n_lines):
            bit = np.int64(1) << a
            if lines & bit:
                continue
            after = lines | bit
            taken = closes(lines, a, line_boxes, box_masks)
            kind = 0 if taken > 0 else (1 if _third_sides(lines, a, line_boxes, box_masks) == 0 else 2)
            if kind != phase:
                continue
            if taken > 0:
                v = taken + _negamax(
                    after, alpha - taken, beta - taken, n_lines, full,
                    line_boxes, box_masks, keys, values, kinds, budget,
                )  # fmt: skip
            else:
                v = -_negamax(
                    after, -beta, -alpha, n_lines, full, line_boxes, box_masks, keys, values, kinds, budget
                )
            if v > best:
                best = v
            if v > alpha:
                alpha = v
            if alpha >= beta:
                break
        if alpha >= beta:
            break
    if budget[0] >= 0:
        keys[slot] = lines + 1
        values[slot] = best
        kinds[slot] = UPPER if best <= alpha0 else (LOWER if best >= beta else EXACT)
    return best


class EndgameSolver:
    """Exact values of Dots and Boxes positions with few lines left, on any board (`Boxes` holds
    at most 63 lines, one int64), by alpha-beta (module docstring). The same methods as the
    table's `DotsSolver`."""

    def __init__(self, boxes: Boxes, table_bits: int = TABLE_BITS, max_nodes: int | None = None):
        self.boxes = boxes
        self.max_nodes = NODES if max_nodes is None else max_nodes
        """The node budget of a call that names none."""
        self._line_boxes = np.array(boxes.line_boxes, np.int64)
        self._box_masks = np.array(boxes.box_masks, np.int64)
        self._keys = np.zeros(1 << table_bits, np.int64)
        self._values = np.zeros(1 << table_bits, np.int8)
        self._kinds = np.zeros(1 << table_bits, np.int8)
        self.nodes = 0
        """Nodes searched since the solver was made."""

    def value_of(self, lines: int, max_nodes: int | None = None) -> int:
        """The best box difference the mover can still gain from the set of drawn `lines`;
        `PastBudget` when the search needs more than `max_nodes` nodes (the solver's own
        `max_nodes` when None)."""
        budget = np.array([self.max_nodes if max_nodes is None else max_nodes], np.int64)
        start = int(budget[0])
        left = self.boxes.boxes - popcount(self.boxes.completed(lines))
        v = _negamax(
            np.int64(lines), -left - 1, left + 1, self.boxes.lines, np.int64(self.boxes.all_lines),
            self._line_boxes, self._box_masks, self._keys, self._values, self._kinds, budget,
        )  # fmt: skip
        self.nodes += start - max(int(budget[0]), 0)
        if budget[0] < 0:
            missing = self.boxes.lines - popcount(lines)
            raise PastBudget(
                f"the endgame solver ran past {start:,} nodes on a position with {missing} lines left"
            )
        return int(v)

    def value(self, state: DotsState, max_nodes: int | None = None) -> int:
        """`DotsSolver.value`, searched."""
        return self.value_of(state.lines, max_nodes)

    def lead(self, state: DotsState) -> int:
        """The mover's box lead so far."""
        return state.margin() if state.current_player() == 0 else -state.margin()

    def outcome(self, state: DotsState, max_nodes: int | None = None) -> int | None:
        """`ExactSolver.outcome`: the result for the player to move under perfect play, +1, 0
        or -1; None when the search needs more than `max_nodes` nodes."""
        total = self._final_margin(state, max_nodes)
        return None if total is None else int(np.sign(total))

    def margin_value(self, state: DotsState, max_nodes: int | None = None) -> float | None:
        """`DotsSolver.margin_value`, searched: the final box difference for the player to move
        under perfect play, over the board's boxes; None past `max_nodes` nodes."""
        total = self._final_margin(state, max_nodes)
        return None if total is None else total / self.boxes.boxes

    def _final_margin(self, state: DotsState, max_nodes: int | None) -> int | None:
        """The mover's lead plus the value still to gain, or None past the budget."""
        try:
            return self.lead(state) + self.value(state, max_nodes)
        except PastBudget:
            return None

    def action_values(self, lines: np.ndarray, max_nodes: int | None = None) -> np.ndarray:
        """`DotsSolver.action_values`, searched: [n, lines], `DRAWN_LINE` on drawn lines."""
        lines = np.asarray(lines, np.int64)
        out = np.full((len(lines), self.boxes.lines), DRAWN_LINE, np.int64)
        for i, s in enumerate(lines.tolist()):
            for a in range(self.boxes.lines):
                if s >> a & 1:
                    continue
                after = s | 1 << a
                taken = popcount(self.boxes.completed(after)) - popcount(self.boxes.completed(s))
                follow = self.value_of(after, max_nodes)
                out[i, a] = taken + follow if taken else -follow
        return out
