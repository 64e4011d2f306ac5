"""Oracles that tests check our games, search and learners against: exhaustive minimax over the
game interface, for boards small enough to enumerate, and a peer's rules (OpenSpiel's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from c4core.games import Game, State


def first_player_value(state: State, outcome: Callable[[State], float] | None = None) -> float:
    """The value of `state` for the first player under perfect play by both sides, by a
    memoised minimax that asks each state who moves (so a player may move twice in a row).
    `outcome` scores a finished game for the first player (default: its return)."""
    score = outcome or (lambda s: s.returns()[0])
    memo: dict[State, float] = {}

    def value(s: State) -> float:
        if s in memo:
            return memo[s]
        if s.is_terminal:
            v = score(s)
        else:
            children = [value(s.apply(a)) for a in s.legal_actions()]
            v = max(children) if s.current_player() == 0 else min(children)
        memo[s] = v
        return v

    return value(state)


def agree_with_openspiel(
    ours: Game, theirs: Any, games: int, seed: int, on_move: Callable[[State, Any, int], None] | None = None
) -> list[State]:
    """Play `games` random games through our `ours` and OpenSpiel's `theirs` (a `pyspiel.Game`)
    at once, asserting move by move that both agree on the end, the returns, the legal actions
    and the player to move; `on_move(state, spiel_state, action)` checks more before each move.
    Returns every state our side passed through."""
    assert theirs.num_distinct_actions() == ours.num_actions
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(games):
        state, spiel = ours.new_state(), theirs.new_initial_state()
        while True:
            seen.append(state)
            assert state.is_terminal == spiel.is_terminal()
            assert state.returns() == tuple(spiel.returns())
            if state.is_terminal:
                break
            assert state.legal_actions() == spiel.legal_actions()
            assert state.current_player() == spiel.current_player()
            action = int(rng.choice(state.legal_actions()))
            if on_move is not None:
                on_move(state, spiel, action)
            state, _ = state.apply(action), spiel.apply_action(action)
    return seen
