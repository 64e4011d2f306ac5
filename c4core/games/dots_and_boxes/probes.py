"""Strategy probes: solver-labelled Dots and Boxes positions, each tagged by the principle of
strong play that decides it, so that a snapshot's score per tag says which principles it has
learned (the question the DotZero system asked and never answered).

A position is tagged from its exact line values (`solver` or `endgame`) alone. Its *optimal*
lines are those worth the best; a position where every line is optimal is never a probe.

- **forced capture**: a line completes a box, and every optimal line completes one.
- **double-cross**: a line completes a box, every optimal line declines (completes none), and
  after an optimal line the opponent can take exactly two boxes in a row: the mover hands over
  the last two boxes of an opened chain (Berlekamp's double-dealing move), to keep control.
- **loop control**: the same, with exactly four boxes for the opponent: the last four boxes of
  an opened loop declined.
- **parity sacrifice**: no line completes a box, a safe line remains (one that gives no box its
  third side), and every optimal line gives a box its third side: a sacrifice before the
  endgame, played for the parity of the long chains.

Positions come from games of a mixed policy (each move a uniformly random line with
probability 0.3, else a capture when there is one, else a safe line, else any line), stopped at
every count of drawn lines in a range, so the chains and loops of real endgames appear; each
distinct position is kept under its tag, up to a quota a tag. A tag still short of its quota
after the games (on 3x3, loops are rare) is filled with the images of its positions under the
board's symmetries, which keep every line's value: these repeat a structure, not a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from c4core.games.base import Symmetry
from c4core.games.dots_and_boxes import DotsAndBoxes
from c4core.games.dots_and_boxes.rules import DRAWN_LINE, DotsState, popcount
from c4core.games.players import Player, sample_actions

if TYPE_CHECKING:  # torch is imported where it is used
    import torch

    from c4core.games.dots_and_boxes.batch import DotsBoards

TAGS = ("forced_capture", "double_cross", "loop_control", "parity_sacrifice")
"""The principles, as metric and tag names (``suite/probe/<tag>``, ``probe_<tag>``)."""
RANDOM_MOVES = 0.3
"""The share of uniformly random moves in the games probes are drawn from (module docstring)."""


def gained(state: DotsState, line: int) -> int:
    """The boxes the mover completes by drawing `line`."""
    return popcount(state.boxes.completed(state.lines | 1 << line)) - popcount(
        state.boxes.completed(state.lines)
    )


def third_sides(state: DotsState, line: int) -> int:
    """The boxes that drawing `line` gives a third side."""
    return sum(mask >> line & 1 and popcount(state.lines & mask) == 2 for mask in state.boxes.box_masks)


def taken_in_a_row(state: DotsState) -> int:
    """The boxes the player to move takes by completing boxes while it can."""
    start = state
    while not state.is_terminal and (takes := [a for a in state.legal_actions() if gained(state, a)]):
        state = state.apply(takes[0])
    return sum(map(popcount, state.owned)) - sum(map(popcount, start.owned))


def tag_of(state: DotsState, values: Sequence[int]) -> str | None:
    """The principle that decides `state`, given each line's exact value for the mover (module
    docstring), or None."""
    legal = state.legal_actions()
    best = max(values[a] for a in legal)
    optimal = [a for a in legal if values[a] == best]
    if len(optimal) == len(legal):
        return None
    captures = {a for a in legal if gained(state, a)}
    if captures:
        if all(a in captures for a in optimal):
            return "forced_capture"
        if not any(a in captures for a in optimal):
            handed = taken_in_a_row(state.apply(optimal[0]))
            return {2: "double_cross", 4: "loop_control"}.get(handed)
        return None
    safe = [a for a in legal if not third_sides(state, a)]
    if safe and all(third_sides(state, a) for a in optimal):
        return "parity_sacrifice"
    return None


def mixed_move(state: DotsState, rng: np.random.Generator) -> int:
    """One move of the policy probes are drawn from (module docstring)."""
    legal = state.legal_actions()
    if rng.random() < RANDOM_MOVES:
        return int(rng.choice(legal))
    if captures := [a for a in legal if gained(state, a)]:
        return int(rng.choice(captures))
    safe = [a for a in legal if not third_sides(state, a)]
    return int(rng.choice(safe or legal))


class MixedBot(Player):
    """`mixed_move` on a batch: the policy probes and the 4x4 suite are drawn from, which
    `DotsAndBoxes.position_player` names, so that a learner's solver-labelled positions
    (`alphazero.solver_samples`) come from the same kind of game."""

    name = "mixed"

    def act(self, boards: DotsBoards, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        legal = boards.legal()
        captures, safe = legal & (boards.captures() > 0), boards.safe()  # safe counts only without captures
        preferred = torch.where(
            captures.any(1, keepdim=True), captures, torch.where(safe.any(1, keepdim=True), safe, legal)
        )
        random = torch.rand(len(boards), generator=generator).to(legal.device) < RANDOM_MOVES
        return sample_actions(torch.where(random.unsqueeze(1), legal, preferred), generator)


@dataclass(frozen=True)
class Probe:
    """One probe position, its tag and its labels."""

    state: DotsState
    """The position."""
    tag: str
    """The principle that decides it (`TAGS`)."""
    values: tuple[int, ...]
    """Each line's exact value for the mover; `DRAWN_LINE` on drawn lines."""

    def keeps_value(self, action: int) -> bool:
        return self.values[action] == max(self.values)


def image(state: DotsState, values: Sequence[int], symmetry: Symmetry) -> tuple[DotsState, tuple[int, ...]]:
    """`state` and its line values under a board symmetry (`DotsAndBoxes.symmetries`)."""
    boxes = state.boxes
    width = boxes.grid[1]
    cell_to = {src: dst for dst, src in enumerate(symmetry.cells)}  # a cell's place in the image
    box_at = {y * width + x: b for b, (y, x) in enumerate(boxes.box_cells)}
    box_to = [box_at[cell_to[y * width + x]] for y, x in boxes.box_cells]
    lines = sum(1 << symmetry.actions[a] for a in range(boxes.lines) if state.lines >> a & 1)
    owned = tuple(sum(1 << box_to[b] for b in range(boxes.boxes) if mask >> b & 1) for mask in state.owned)
    moved = [DRAWN_LINE] * boxes.lines
    for a, v in enumerate(values):
        moved[symmetry.actions[a]] = v
    return DotsState(boxes, lines, (owned[0], owned[1]), state.player), tuple(moved)


def make_probes(
    game: DotsAndBoxes,
    label: Callable[[np.ndarray], np.ndarray],
    per_tag: int,
    seed: int,
    drawn: tuple[int, int],
    games: int,
) -> tuple[Probe, ...]:
    """Up to `per_tag` probes a tag on `game`'s board, from at most `games` games of the mixed
    policy (seeded), each looked at with `drawn[0]` to `drawn[1]` lines drawn, then symmetric
    images for the tags still short (module docstring); `label` gives the line values of a
    batch of line sets (`DotsSolver.action_values` or `EndgameSolver.action_values`)."""
    rng = np.random.default_rng(seed)
    found: dict[str, list[Probe]] = {t: [] for t in TAGS}
    seen: set[tuple[int, int, int, int]] = set()
    lo, hi = drawn
    for _ in range(games):
        if all(len(v) >= per_tag for v in found.values()):
            break
        state = DotsState(game.boxes)
        while not state.is_terminal and popcount(state.lines) <= hi:
            name = (state.lines, state.owned[0], state.owned[1], state.player)
            if popcount(state.lines) >= lo and name not in seen:
                seen.add(name)
                values = tuple(int(v) for v in label(np.array([state.lines]))[0])
                tag = tag_of(state, values)
                if tag is not None and len(found[tag]) < per_tag:
                    found[tag].append(Probe(state, tag, values))
            state = state.apply(mixed_move(state, rng))
    for tag, probes in found.items():
        for probe in list(probes):
            for symmetry in game.symmetries[1:]:
                if len(probes) >= per_tag:
                    break
                state, values = image(probe.state, probe.values, symmetry)
                name = (state.lines, state.owned[0], state.owned[1], state.player)
                if name not in seen:
                    seen.add(name)
                    probes.append(Probe(state, tag, values))
    return tuple(p for t in TAGS for p in found[t])
