"""Games as plug-ins: the registry of every game the league can play.

A game is a package of its own (`connect4/`, `dots_and_boxes/`) that implements the interface
in `c4core.games.base`; `load` builds one from its name and parameters, as a league config or a
command line names it. Games never import algorithms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from c4core.games.base import BatchState, ExactSolver, Game, State, Suite, Symmetry
from c4core.games.connect4 import ConnectFour
from c4core.games.connect4.rules import Geometry
from c4core.games.dots_and_boxes import DotsAndBoxes
from c4core.games.dots_and_boxes.rules import Boxes
from c4core.games.players import Player, RandomBot

if TYPE_CHECKING:
    import torch

__all__ = [
    "GAMES",
    "VARIANTS",
    "BatchState",
    "ConnectFour",
    "DotsAndBoxes",
    "ExactSolver",
    "Game",
    "State",
    "Suite",
    "Symmetry",
    "exact_from",
    "exact_solver",
    "exact_value",
    "game_of",
    "has_margin",
    "held_out",
    "load",
    "move_values",
    "position_player",
    "returns_of",
    "solvable",
]

GAMES: dict[str, Callable[..., Game]] = {
    ConnectFour.name: ConnectFour.from_params,
    DotsAndBoxes.name: DotsAndBoxes.from_params,
}
"""Every registered game: its name, and a factory taking its parameters as keywords."""


VARIANTS: dict[str, Game] = {
    game.variant: game
    for game in (
        ConnectFour(),
        ConnectFour(Geometry(rows=4, cols=4, connect=3)),
        DotsAndBoxes(Boxes(rows=3, cols=3)),
        DotsAndBoxes(Boxes(rows=4, cols=4)),
    )
}
"""The named variants a user can ask for by one name (``c4 league --game connect3-4x4``), each
under its own `Game.variant`, which also names its registered model."""


def load(name: str, **params: int) -> Game:
    """The game or named variant `name` (`GAMES`, `VARIANTS`) with `params` replacing its own
    (the game's defaults for the rest); `ValueError` for an unknown name, an unknown parameter
    or a bad value."""
    if name not in GAMES and name in VARIANTS:  # a game's own name is its default variant's too
        variant = VARIANTS[name]
        return load(variant.name, **{**variant.params, **params})
    if name not in GAMES:
        known = sorted(set(GAMES) | set(VARIANTS))
        raise ValueError(f"unknown game {name!r}: choose one of {', '.join(known)}")
    takes = GAMES[name]().params
    if unknown := sorted(set(params) - set(takes)):
        raise ValueError(f"{name} has no parameter {', '.join(unknown)}: it takes {', '.join(takes)}")
    return GAMES[name](**params)


def game_of(states: Any) -> Game:
    """The game that a batch or a scalar state belongs to, with its parameters."""
    geometry = getattr(states, "geometry", None)
    if isinstance(geometry, Geometry):  # Connect Four's `Position` and `Boards`
        return ConnectFour(geometry)
    boxes = getattr(states, "boxes", None)
    if isinstance(boxes, Boxes):
        return DotsAndBoxes(boxes)
    raise ValueError(f"{type(states).__name__} is not a state of any registered game")


def solvable(game: Game) -> bool:
    """Whether `game` has an exact solver that reaches its board (`Game.exact_solver`)."""
    return bool(getattr(game, "solvable", False))


def exact_from(game: Game) -> int:
    """The first ply from which `game`'s exact solver settles positions cheaply (`Game.exact_from`;
    0: every ply, as a table does)."""
    return int(getattr(game, "exact_from", 0))


def position_player(game: Game) -> Player:
    """The scripted player whose moves open the positions a learner asks `game`'s solver to label
    (`Game.position_player`; absent: uniformly random moves)."""
    return getattr(game, "position_player", None) or RandomBot()


def exact_solver(game: Game, max_nodes: int | None = None) -> ExactSolver:
    """`game`'s exact solver, searching at most `max_nodes` nodes a position (None: no limit);
    `ValueError` naming the game when it has none for its board."""
    if not solvable(game):
        raise ValueError(f"{game.title} has no exact solver")
    return game.exact_solver(max_nodes)  # type: ignore[attr-defined]


def held_out(game: Game, seed: int) -> Callable[[BatchState], torch.Tensor] | None:
    """What a learner keeps out of the positions it draws to label by the solver: the suite
    `game` makes from the league's `seed` (`Suite`'s optional ``holds``), which the league scores
    its snapshots on; None for a game whose suite is a file or that has none (Connect Four's
    suite positions lie in a space that random positions hardly ever meet)."""
    suite_of = getattr(game, "suite", None)
    suite = suite_of(None, seed) if suite_of is not None else None
    return getattr(suite, "holds", None)


def has_margin(game: Game) -> bool:
    """Whether `game` grades its results by a margin too (`Game`'s optional ``has_margin``)."""
    return bool(getattr(game, "has_margin", False))


def returns_of(states: Any, margin: bool = False) -> Any:
    """The results of a finished `State` or `BatchState`: its `returns`, or with `margin` its
    ``margin_returns`` (a game that `has_margin`)."""
    return states.margin_returns() if margin else states.returns()


def exact_value(
    solver: ExactSolver, state: State, margin: bool = False, max_nodes: int | None = None
) -> float | None:
    """`solver`'s exact value of `state` for its mover: its outcome, or with `margin` its margin
    value (a game that `has_margin`); None when not settled within `max_nodes`."""
    if margin:
        return solver.margin_value(state, max_nodes)  # type: ignore[attr-defined]
    return solver.outcome(state, max_nodes)


def move_values(
    solver: ExactSolver, boards: BatchState, margin: bool = False, max_nodes: int | None = None
) -> torch.Tensor:
    """[n, num_actions] float32: each legal move's exact value for the mover of each of `boards`
    (its outcome, or with `margin` its margin value): the result it ends the game with, or the
    exact value of the position it leads to, with the same sign when the mover moves again (Dots
    and Boxes' extra turn) and the opposite otherwise; -inf on illegal moves. A move the solver
    does not settle within `max_nodes` is NaN, and so may be its position's other moves: the
    position is unsettled. The solver's own ``move_values`` answers when it has one
    (`ExactSolver`); otherwise each move is solved in turn."""
    import torch

    batched = getattr(solver, "move_values", None)
    if batched is not None:
        return batched(boards, margin, max_nodes)
    legal = boards.legal().cpu()
    values = torch.full(tuple(legal.shape), -math.inf)
    for i in range(len(boards)):
        state = boards.state(i)
        mover = state.current_player()
        for action in state.legal_actions():
            after = state.apply(action)
            if after.is_terminal:
                value: float | None = returns_of(after, margin)[mover]
            else:
                value = exact_value(solver, after, margin, max_nodes)
                if value is not None and after.current_player() != mover:
                    value = -value
            if value is None:  # the position is unsettled: its other moves need no solve
                values[i, legal[i]] = math.nan
                break
            values[i, action] = value
    return values
