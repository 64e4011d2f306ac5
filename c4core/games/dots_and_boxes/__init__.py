"""Dots and Boxes on R x C boxes behind the game interface: a player who completes a box moves
again, so the player to move is a state's own field, never the move number's parity.

The rules and the scalar state are in `rules` (its docstring draws the line numbering), the
tensor engine in `batch`. An action is a line number; the move notation is ``h<r>,<c>`` and
``v<r>,<c>``. A square board has the eight symmetries of the square, a rectangle four.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from c4core.figures import quoted
from c4core.games.base import Symmetry
from c4core.games.dots_and_boxes.bots import MCTS
from c4core.games.dots_and_boxes.rules import (
    ENDGAME_LINES,
    MAX_LINES,
    NUM_PLANES,
    SEARCHED_LINES,
    Boxes,
    DotsState,
)

if TYPE_CHECKING:
    import torch

    from c4core.games.dots_and_boxes.batch import DotsBoards
    from c4core.games.dots_and_boxes.endgame import EndgameSolver
    from c4core.games.dots_and_boxes.solver import DotsSolver
    from c4core.games.dots_and_boxes.suite import SeededSuite
    from c4core.games.players import Player


@dataclass(frozen=True)
class DotsAndBoxes:
    """Dots and Boxes (`Game`) on `boxes`."""

    boxes: Boxes = field(default_factory=Boxes)
    """Board size in boxes; the default is 3x3."""

    name = "dots_and_boxes"
    has_margin = True
    """Results graded by the box difference too (`DotsState.margin_returns`)."""

    @classmethod
    def from_params(cls, rows: int = 3, cols: int = 3) -> DotsAndBoxes:
        return cls(Boxes(rows=rows, cols=cols))

    @property
    def params(self) -> Mapping[str, int]:
        return {"rows": self.boxes.rows, "cols": self.boxes.cols}

    @property
    def variant(self) -> str:
        return f"dots-and-boxes-{self.boxes.rows}x{self.boxes.cols}"

    @property
    def title(self) -> str:
        return f"Dots and Boxes on {self.boxes.rows}x{self.boxes.cols} boxes"

    @property
    def num_actions(self) -> int:
        return self.boxes.lines

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        return (NUM_PLANES, *self.boxes.grid)

    @property
    def max_game_length(self) -> int:
        return self.boxes.lines

    @cached_property
    def symmetries(self) -> tuple[Symmetry, ...]:
        height, width = self.boxes.grid
        maps = {
            "identity": lambda y, x: (y, x),
            "flip-rows": lambda y, x: (height - 1 - y, x),
            "flip-cols": lambda y, x: (y, width - 1 - x),
            "rot180": lambda y, x: (height - 1 - y, width - 1 - x),
        }
        if height == width:
            maps |= {
                "transpose": lambda y, x: (x, y),
                "anti-transpose": lambda y, x: (width - 1 - x, height - 1 - y),
                "rot90": lambda y, x: (x, height - 1 - y),
                "rot270": lambda y, x: (width - 1 - x, y),
            }
        line_at = {cell: a for a, cell in enumerate(self.boxes.line_cells)}
        out = []
        for name, f in maps.items():
            cells = [0] * (height * width)
            for y in range(height):
                for x in range(width):
                    ty, tx = f(y, x)
                    cells[ty * width + tx] = y * width + x  # the image's cell f(p) shows cell p
            actions = tuple(line_at[f(*cell)] for cell in self.boxes.line_cells)
            out.append(Symmetry(name, tuple(cells), actions))
        return tuple(out)

    def new_state(self) -> DotsState:
        return DotsState(self.boxes)

    def new_batch(self, n: int, device: str | torch.device = "cpu") -> DotsBoards:
        from c4core.games.dots_and_boxes.batch import DotsBoards

        return DotsBoards(n, self.boxes, device)

    def batch_of(self, states: Sequence[DotsState], device: str | torch.device = "cpu") -> DotsBoards:
        from c4core.games.dots_and_boxes.batch import DotsBoards

        return DotsBoards.from_states(list(states), self.boxes, device)

    def parse_action(self, text: str) -> int:
        return self.boxes.parse_action(text)

    def format_action(self, action: int) -> str:
        return self.boxes.format_action(action)

    def state_from_moves(self, moves: str) -> DotsState:
        if not isinstance(moves, str):
            raise ValueError(
                f"moves must be a string of lines such as 'h0,0 v0,1', got {type(moves).__name__}"
            )
        state = self.new_state()
        for i, text in enumerate(moves.split()):
            action = self.parse_action(text)
            if state.lines >> action & 1:
                raise ValueError(f"move {i + 1} of {quoted(moves)} is illegal: {text} is already drawn")
            state = state.apply(action)
        return state

    def moves_string(self, actions: Sequence[int]) -> str:
        return " ".join(self.format_action(int(a)) for a in actions)

    @property
    def solvable(self) -> bool:
        """Whether the board has an exact solver: the table on at most `MAX_LINES` lines (3x3),
        the endgame search on at most `SEARCHED_LINES` (4x4)."""
        return self.boxes.lines <= SEARCHED_LINES

    @property
    def exact_from(self) -> int:
        """The first ply from which the exact solver settles positions cheaply (`Game.exact_from`):
        every ply with the table, and the last `ENDGAME_LINES` lines with the endgame search."""
        return 0 if self.boxes.lines <= MAX_LINES else self.boxes.lines - ENDGAME_LINES

    @property
    def position_player(self) -> Player | None:
        """The player that draws positions to label (`Game.position_player`): uniformly random
        moves where the table solves every position (None), and past it the mixed policy the
        endgame probes are drawn from (`probes.MixedBot`), since uniformly random play's 4x4
        endgames are mostly boxes to collect."""
        from c4core.games.dots_and_boxes.probes import MixedBot

        return None if self.boxes.lines <= MAX_LINES else MixedBot()

    def exact_solver(self, max_nodes: int | None = None) -> DotsSolver | EndgameSolver:
        """The retrograde table of every set of drawn lines (`solver.DotsSolver`, built once a
        board and process), which looks values up, so `max_nodes` never binds; past the table's
        lines, the endgame search (`endgame.EndgameSolver`), `max_nodes` a position (None: its
        own budget); `ValueError` on a board with neither (`solvable`)."""
        if not self.solvable:
            raise ValueError(f"{self.title} has no exact solver")
        if self.boxes.lines > MAX_LINES:
            from c4core.games.dots_and_boxes.endgame import EndgameSolver

            return EndgameSolver(self.boxes, max_nodes=max_nodes)
        from c4core.games.dots_and_boxes.solver import DotsSolver

        return DotsSolver(self.boxes)

    def suite(self, path: str | Path | None = None, seed: int = 0) -> SeededSuite | None:
        """The suite made from `seed` (`suite.SeededSuite`: 1,200 positions labelled by the exact
        solver on 3x3, endgame probes labelled by the endgame search on 4x4, and strategy probes
        on both) on the boards it labels (`suite.DRAWN`), None elsewhere; `ValueError` for a
        `path`: this game reads no suite file."""
        if path is not None:
            raise ValueError(f"{self.title} makes its suite from the league's seed: it reads no suite file")
        from c4core.games.dots_and_boxes.suite import DRAWN, SeededSuite

        return SeededSuite(self, seed) if (self.boxes.rows, self.boxes.cols) in DRAWN else None

    def bots(self) -> Mapping[str, Callable[[], Player]]:
        """`random`; `greedy`, `defensive`, `heuristic` and `mcts1000` (`bots`: any `mcts<N>`
        is accepted, N simulations a move); `perfect`, the exact solver's (boards of at most 3x3
        boxes: `solver.DotsPerfectBot`, whose module loads numba, so only when made)."""
        from c4core.games.dots_and_boxes.bots import DefensiveBot, GreedyBot, HeuristicBot
        from c4core.games.players import RandomBot

        def perfect() -> Player:
            from c4core.games.dots_and_boxes.solver import DotsPerfectBot

            return DotsPerfectBot(self.boxes)

        named = {
            "random": RandomBot,
            "greedy": GreedyBot,
            "defensive": DefensiveBot,
            "heuristic": HeuristicBot,
        }
        return _Bots({**named, "mcts1000": _mcts(1000), "perfect": perfect})


def _mcts(simulations: int) -> Callable[[], Player]:
    def make() -> Player:
        from c4core.games.dots_and_boxes.bots import MctsBot

        return MctsBot(simulations)

    return make


class _Bots(Mapping[str, "Callable[[], Player]"]):
    """A game's bots by name, which also makes ``mcts<N>`` for any N of at least 1."""

    def __init__(self, named: Mapping[str, Callable[[], Player]]):
        self.named = named

    def __getitem__(self, name: str) -> Callable[[], Player]:
        if name in self.named:
            return self.named[name]
        digits = name.removeprefix(MCTS) if isinstance(name, str) else ""
        if name != digits and digits.isascii() and digits.isdigit() and int(digits) >= 1:
            return _mcts(int(digits))
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.named)

    def __len__(self) -> int:
        return len(self.named)
