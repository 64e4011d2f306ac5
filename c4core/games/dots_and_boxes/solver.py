"""Dots and Boxes solved exactly on boards of up to 24 lines (3x3 boxes), and its `perfect` bot.

What is left of a game of Dots and Boxes depends only on the set of drawn lines: the boxes
already owned are counted and done, and the player to move is whoever moves. So, after Wilson's
analysis, the *value* of a set of drawn lines is the best box difference the player to move can
still gain over the opponent from there, both sides playing perfectly. Drawing line ``a``, which
completes ``c`` boxes, is worth ``c + V(lines | a)`` when ``c > 0`` (the mover moves again) and
``-V(lines | a)`` otherwise (the opponent moves), and ``V(all lines) = 0``. Adding a line makes
the bitmask larger, so one sweep from the full board down to the empty one settles every set:
a retrograde solve, compiled with numba, of one signed byte per line set (2^24 bytes, 16 MiB, on
3x3 boxes), made once per process and, given a folder, kept on disk.

A position's outcome for its mover under perfect play is the sign of its box lead so far plus
that value. The values of the empty boards (the first player's margin) are Wilson's published
ones: -1 on 1x1, 0 on 1x2, +2 on 2x2, -2 on 2x3 and -3 on 3x3.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from c4core.games.dots_and_boxes.rules import DRAWN_LINE, MAX_LINES, Boxes, DotsState
from c4core.games.players import Player, sample_actions

if TYPE_CHECKING:
    import torch

    from c4core.games.dots_and_boxes.batch import DotsBoards


@njit(cache=True)
def _retrograde(lines: int, line_boxes: np.ndarray, box_masks: np.ndarray) -> np.ndarray:
    """V[s] for every set s of drawn lines, from the full board down."""
    full = (1 << lines) - 1
    value = np.zeros(full + 1, np.int8)
    for s in range(full - 1, -1, -1):
        best = -128
        for a in range(lines):
            bit = 1 << a
            if s & bit:
                continue
            after = s | bit
            taken = 0
            for k in range(2):
                b = line_boxes[a, k]
                if b >= 0 and (after & box_masks[b]) == box_masks[b]:
                    taken += 1
            v = taken + value[after] if taken else -value[after]
            if v > best:
                best = v
        value[s] = best
    return value


@lru_cache(maxsize=4)
def _table(boxes: Boxes, cache: Path | None) -> np.ndarray:
    path = cache / f"dots-and-boxes-{boxes.rows}x{boxes.cols}.npy" if cache is not None else None
    if path is not None and path.is_file():
        table = np.load(path)
        if table.shape == (1 << boxes.lines,):
            return table
    table = _retrograde(
        boxes.lines, np.array(boxes.line_boxes, np.int64), np.array(boxes.box_masks, np.int64)
    )
    if path is not None:  # atomic, so a reader never meets half a table
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{id(table)}.tmp")
        with tmp.open("wb") as f:
            np.save(f, table)
        tmp.replace(path)
    return table


class DotsSolver:
    """Exact values of Dots and Boxes positions on `boxes` (at most `MAX_LINES` lines)."""

    def __init__(self, boxes: Boxes, cache: Path | None = None):
        if boxes.lines > MAX_LINES:
            raise ValueError(
                f"the exact solver takes boards of at most {MAX_LINES} lines (3x3 boxes), "
                f"not {boxes.rows}x{boxes.cols} ({boxes.lines} lines)"
            )
        self.boxes = boxes
        self.table = _table(boxes, cache)
        self._line_bits = np.array([1 << a for a in range(boxes.lines)], np.int64)
        self._line_boxes = np.array(boxes.line_boxes, np.int64)
        self._box_masks = np.array(boxes.box_masks, np.int64)

    def value(self, state: DotsState) -> int:
        """The best box difference the player to move can still gain (0 at the end)."""
        return int(self.table[state.lines])

    def lead(self, state: DotsState) -> int:
        """The mover's box lead so far."""
        return state.margin() if state.current_player() == 0 else -state.margin()

    def outcome(self, state: DotsState, max_nodes: int | None = None) -> int:
        """`ExactSolver.outcome`: the game's result for the player to move under perfect play,
        +1, 0 or -1, looked up (so `max_nodes` is never reached)."""
        return int(np.sign(self.lead(state) + self.value(state)))

    def margin_value(self, state: DotsState, max_nodes: int | None = None) -> float:
        """The game's final box difference for the player to move under perfect play, over the
        board's boxes (`DotsState.margin_returns` of perfect play), looked up."""
        return (self.lead(state) + self.value(state)) / self.boxes.boxes

    def action_values(self, lines: np.ndarray) -> np.ndarray:
        """[n, lines]: each line's value for the mover of each set of drawn `lines` [n] (the
        boxes it completes now plus what follows, or minus the opponent's value after it);
        a large negative number on drawn lines."""
        lines = np.asarray(lines, np.int64)
        after = lines[:, None] | self._line_bits
        closed = np.zeros(after.shape, np.int64)
        for k in range(2):
            box = self._line_boxes[:, k]
            masks = np.where(box >= 0, self._box_masks[np.maximum(box, 0)], -1)
            closed += (box >= 0) & ((after & masks) == masks)
        follow = self.table[after].astype(np.int64)
        values = np.where(closed > 0, closed + follow, -follow)
        return np.where((lines[:, None] & self._line_bits) != 0, DRAWN_LINE, values)

    def move_values(
        self, boards: DotsBoards, margin: bool = False, max_nodes: int | None = None
    ) -> torch.Tensor:
        """`ExactSolver`'s optional batch of every legal line's exact value for each mover of
        `boards` (as `c4core.games.move_values`): the sign of its box lead plus the line's
        `action_values`, or with `margin` that sum over the boxes; -inf on drawn lines. Looked
        up, so every line is settled."""
        import torch

        first = boards.margin().cpu()
        lead = torch.where(boards.player.cpu() == 0, first, -first)
        total = (torch.from_numpy(self.action_values(boards.lines.cpu().numpy())) + lead[:, None]).float()
        values = total / self.boxes.boxes if margin else torch.sign(total)
        return torch.where(boards.legal().cpu(), values, -math.inf)


class DotsPerfectBot(Player):
    """Dots and Boxes' `perfect`: a line of the best exact value, uniformly among those."""

    name = "perfect"

    def __init__(self, boxes: Boxes, cache: Path | None = None):
        self.solver = DotsSolver(boxes, cache)

    def act(self, boards: DotsBoards, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        values = self.solver.action_values(boards.lines.cpu().numpy())
        best = values == values.max(1, keepdims=True)
        weights = torch.from_numpy(best) & boards.legal().cpu()
        return sample_actions(weights, generator).to(boards.device)
